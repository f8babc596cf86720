package main

import (
	"slices"
	"strings"
	"testing"
)

func TestKcatFlags(t *testing.T) {
	for _, tt := range []struct {
		name  string
		props map[string]string
		flags []string
		notes int
	}{
		{"plaintext", map[string]string{}, nil, 0},
		{"sasl_ssl scram, PEM trust", map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
			"sasl.jaas.config":        `org.apache.kafka.common.security.scram.ScramLoginModule required username="svc" password="s3cr3t";`,
			"ssl.truststore.location": "/etc/kafka/ca.pem", "ssl.truststore.type": "PEM"},
			[]string{"-X security.protocol=sasl_ssl", "-X sasl.mechanisms=SCRAM-SHA-512", `-X sasl.username="$KAFKA_USERNAME"`, `-X sasl.password="$KAFKA_PASSWORD"`, "-X ssl.ca.location=/etc/kafka/ca.pem"}, 0},
		{"JKS trust store: convert it", map[string]string{"security.protocol": "SSL", "ssl.truststore.location": "/etc/kafka/trust.jks", "ssl.truststore.password": "changeit"},
			[]string{"-X security.protocol=ssl", "-X ssl.ca.location=/etc/kafka/trust.pem"}, 1},
		{"no hostname check", map[string]string{"ssl.endpoint.identification.algorithm": ""}, []string{"-X ssl.endpoint.identification.algorithm=none"}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			flags, notes := kcatFlags(tt.props)
			if !slices.Equal(flags, tt.flags) {
				t.Errorf("flags %q, want %q", flags, tt.flags)
			}
			if len(notes) != tt.notes {
				t.Errorf("notes %q", notes)
			}
			all := strings.Join(append(flags, notes...), " ")
			for _, secret := range []string{"s3cr3t", "changeit", `username="svc"`} {
				if strings.Contains(all, secret) {
					t.Errorf("a secret in the replay flags: %s", all)
				}
			}
		})
	}
}
