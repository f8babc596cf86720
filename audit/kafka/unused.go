package kafka

import (
	"slices"
	"strings"
)

// usedProperties are the client properties kaudit reads: the security
// settings here and the schema registry's (audit/codec).
var usedProperties = map[string]bool{
	"security.protocol": true, "sasl.mechanism": true, "sasl.jaas.config": true,
	"sasl.username": true, "sasl.password": true,
	"sasl.oauthbearer.token.endpoint.url": true, "sasl.oauthbearer.scope": true,
	"sasl.kerberos.service.name": true,
	"ssl.ca.location":            true, "ssl.truststore.certificates": true,
	"ssl.truststore.location": true, "ssl.truststore.type": true, "ssl.truststore.password": true,
	"ssl.certificate.location": true, "ssl.key.location": true,
	"ssl.keystore.certificate.chain": true, "ssl.keystore.key": true,
	"ssl.keystore.location": true, "ssl.keystore.type": true, "ssl.keystore.password": true,
	"ssl.key.password": true, "ssl.endpoint.identification.algorithm": true,
}

// usedPrefixes are the schema registry client's properties.
var usedPrefixes = []string{"schema.registry.", "basic.auth.", "bearer.auth."}

// builtInHandlers are the callback handler classes whose work kaudit
// does itself (KIP-768's token retrieval, MSK's IAM signing): setting them,
// as a Java client must, is not a property kaudit ignores.
var builtInHandlers = map[string]string{
	"sasl.login.callback.handler.class":  "OAuthBearerLoginCallbackHandler",
	"sasl.client.callback.handler.class": "IAMClientCallbackHandler",
}

// UnusedProperties returns, sorted, the keys of props that kaudit does not
// use (a Java client setting such as bootstrap.servers or
// request.timeout.ms, or a typo): names only, never values.
func UnusedProperties(props map[string]string) []string {
	var out []string
	for k, v := range props {
		if usedProperties[k] || slices.ContainsFunc(usedPrefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			continue
		}
		if h, ok := builtInHandlers[k]; ok && strings.HasSuffix(strings.TrimSpace(v), "."+h) {
			continue
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
