package main

import (
	"regexp"
	"slices"
	"strings"
)

// kcatFlags turns the client's Java properties into kcat (librdkafka) -X
// flags for the postmortem's replay commands. Secrets never appear: a
// password or a JAAS config becomes a reference to an environment
// variable the operator sets. What kcat cannot take as is (a JKS or
// PKCS12 store) is named in a note with what to convert it to.
func kcatFlags(props map[string]string) (flags, notes []string) {
	var out []string
	x := func(k, v string) { out = append(out, "-X "+k+"="+v) }
	if p := props["security.protocol"]; p != "" {
		x("security.protocol", strings.ToLower(p))
	}
	if m := props["sasl.mechanism"]; m != "" {
		x("sasl.mechanisms", m)
	}
	if jaas := props["sasl.jaas.config"]; jaas != "" {
		switch {
		case strings.Contains(jaas, "PlainLoginModule"), strings.Contains(jaas, "ScramLoginModule"):
			x("sasl.username", `"$KAFKA_USERNAME"`)
			x("sasl.password", `"$KAFKA_PASSWORD"`)
		case strings.Contains(jaas, "OAuthBearerLoginModule"):
			x("sasl.oauthbearer.method", "oidc")
			x("sasl.oauthbearer.client.id", `"$KAFKA_CLIENT_ID"`)
			x("sasl.oauthbearer.client.secret", `"$KAFKA_CLIENT_SECRET"`)
			if u := props["sasl.oauthbearer.token.endpoint.url"]; u != "" {
				x("sasl.oauthbearer.token.endpoint.url", shellWord(u))
			}
		}
	}
	store := func(loc, typ, pem string) {
		l := props[loc]
		if l == "" {
			return
		}
		switch t := strings.ToUpper(props[typ]); t {
		case "PEM":
			x(pem, shellWord(l))
		default:
			if t == "" {
				t = "JKS"
			}
			conv := strings.TrimSuffix(strings.TrimSuffix(l, ".jks"), ".p12") + ".pem"
			x(pem, shellWord(conv))
			notes = append(notes, "kcat reads PEM, not "+t+": convert "+l+" ("+loc+") to "+conv+" first (keytool -importkeystore to PKCS12, then openssl pkcs12)")
		}
	}
	store("ssl.truststore.location", "ssl.truststore.type", "ssl.ca.location")
	store("ssl.keystore.location", "ssl.keystore.type", "ssl.certificate.location")
	if props["ssl.keystore.location"] != "" || props["ssl.key.password"] != "" {
		x("ssl.key.password", `"$KAFKA_SSL_KEY_PASSWORD"`)
	}
	if v, ok := props["ssl.endpoint.identification.algorithm"]; ok && v == "" {
		x("ssl.endpoint.identification.algorithm", "none")
	}
	return slices.Clip(out), notes
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./:@%+=,-]+$`)

// shellWord quotes s for a POSIX shell where it needs it.
func shellWord(s string) string {
	if plainWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
