package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/kaudit/kaudit/internal/input"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaudit/kaudit/internal/tlsstore"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// securityOpts turns Kafka's Java client properties into kgo options: TLS
// for SSL and SASL_SSL, a SASL mechanism for SASL_PLAINTEXT and SASL_SSL.
// Properties it does not know are ignored. Errors name properties, never
// their values.
func securityOpts(props map[string]string) ([]kgo.Opt, error) {
	proto := strings.ToUpper(strings.TrimSpace(props["security.protocol"]))
	if proto == "" {
		proto = "PLAINTEXT"
	}
	var useTLS, useSASL bool
	switch proto {
	case "PLAINTEXT":
	case "SSL":
		useTLS = true
	case "SASL_PLAINTEXT":
		useSASL = true
	case "SASL_SSL":
		useTLS, useSASL = true, true
	default:
		return nil, fmt.Errorf("security.protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", proto)
	}
	var opts []kgo.Opt
	if useTLS {
		tc, err := tlsConfig(props)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if useSASL {
		m, err := saslMechanism(props)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

// saslMechanism builds the mechanism of sasl.mechanism (or the one
// sasl.jaas.config's login module implies; with neither, Kafka's default
// GSSAPI): PLAIN and SCRAM from the module's username and password (or
// sasl.username/sasl.password), OAUTHBEARER, GSSAPI and AWS_MSK_IAM (see
// auth.go).
func saslMechanism(props map[string]string) (sasl.Mechanism, error) {
	mech := strings.ToUpper(strings.TrimSpace(props["sasl.mechanism"]))
	user, pass := props["sasl.username"], props["sasl.password"]
	var j jaasConfig
	if jaas := strings.TrimSpace(props["sasl.jaas.config"]); jaas != "" {
		var err error
		if j, err = parseJAAS(jaas); err != nil {
			return nil, fmt.Errorf("sasl.jaas.config: %w", err)
		}
		if u, ok := j.options["username"]; ok {
			user = u
		}
		if p, ok := j.options["password"]; ok {
			pass = p
		}
	}
	implied, known := moduleMechanism(j.module)
	if !known {
		return nil, errors.New("sasl.jaas.config: the login module is not supported: want PlainLoginModule, ScramLoginModule, OAuthBearerLoginModule, Krb5LoginModule or IAMLoginModule")
	}
	if mech == "" {
		switch implied {
		case "SCRAM":
			return nil, errors.New("sasl.mechanism is not set and ScramLoginModule does not say which: want SCRAM-SHA-256 or SCRAM-SHA-512")
		case "":
			mech = "GSSAPI" // Kafka's default
		default:
			mech = implied
		}
	}
	family := mech
	if strings.HasPrefix(mech, "SCRAM-") {
		family = "SCRAM"
	}
	switch mech {
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI", "AWS_MSK_IAM":
	default:
		return nil, fmt.Errorf("sasl.mechanism %q is not supported: want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, GSSAPI or AWS_MSK_IAM", mech)
	}
	if implied != "" && implied != family {
		return nil, fmt.Errorf("sasl.mechanism %s does not go with %s in sasl.jaas.config", mech, j.module[strings.LastIndexByte(j.module, '.')+1:])
	}
	switch mech {
	case "OAUTHBEARER":
		return oauthMechanism(props, j)
	case "GSSAPI":
		return kerberosMechanism(props, j)
	case "AWS_MSK_IAM":
		return awsMechanism(j)
	}
	if user == "" || pass == "" {
		return nil, fmt.Errorf("sasl.mechanism %s needs a username and a password: set them in sasl.jaas.config or sasl.username and sasl.password", mech)
	}
	switch mech {
	case "PLAIN":
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	}
	return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
}

// jaasConfig is one parsed JAAS login module entry.
type jaasConfig struct {
	module  string
	flag    string
	options map[string]string
}

// parseJAAS parses a sasl.jaas.config value, e.g.
//
//	org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="…";
//
// Values are double-quoted (with backslash escapes) or bare words. Errors
// never quote a value.
func parseJAAS(s string) (jaasConfig, error) {
	toks, err := jaasTokens(s)
	if err != nil {
		return jaasConfig{}, err
	}
	if len(toks) < 2 || toks[0].quoted || toks[1].quoted {
		return jaasConfig{}, errors.New("want <LoginModule class> <flag> key=\"value\"…;")
	}
	j := jaasConfig{module: toks[0].s, flag: strings.ToLower(toks[1].s), options: map[string]string{}}
	switch j.flag {
	case "required", "requisite", "sufficient", "optional":
	default:
		return jaasConfig{}, errors.New("login module flag: want required, requisite, sufficient or optional")
	}
	rest := toks[2:]
	for len(rest) > 0 {
		if !rest[0].quoted && rest[0].s == ";" {
			if len(rest) > 1 {
				return jaasConfig{}, errors.New("only one login module is supported")
			}
			return j, nil
		}
		if len(rest) < 3 || rest[0].quoted || rest[1].quoted || rest[1].s != "=" {
			return jaasConfig{}, errors.New("want key=\"value\" options after the login module flag")
		}
		j.options[rest[0].s] = rest[2].s
		rest = rest[3:]
	}
	return jaasConfig{}, errors.New("missing ';' at the end")
}

type jaasToken struct {
	s      string
	quoted bool
}

func jaasTokens(s string) ([]jaasToken, error) {
	var toks []jaasToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '=' || c == ';':
			toks = append(toks, jaasToken{s: string(c)})
			i++
		case c == '"':
			var b strings.Builder
			i++
			closed := false
			for i < len(s) {
				if s[i] == '\\' && i+1 < len(s) {
					b.WriteByte(s[i+1])
					i += 2
					continue
				}
				if s[i] == '"' {
					closed = true
					i++
					break
				}
				b.WriteByte(s[i])
				i++
			}
			if !closed {
				return nil, errors.New("unterminated quoted value")
			}
			toks = append(toks, jaasToken{s: b.String(), quoted: true})
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n\r=;\"", rune(s[j])) {
				j++
			}
			toks = append(toks, jaasToken{s: s[i:j]})
			i = j
		}
	}
	return toks, nil
}

// tlsConfig builds the TLS config from ssl.* properties. Trust: PEM from
// ssl.ca.location (librdkafka), ssl.truststore.certificates (inline PEM) or
// ssl.truststore.location, a JKS (Java's default type), PKCS12 or PEM
// store. Client certificate: ssl.certificate.location + ssl.key.location,
// ssl.keystore.certificate.chain + ssl.keystore.key, or
// ssl.keystore.location (JKS, PKCS12 or PEM). An empty
// ssl.endpoint.identification.algorithm verifies the chain but not the host
// name.
func tlsConfig(props map[string]string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	var caPEM []byte
	switch {
	case props["ssl.ca.location"] != "":
		b, err := input.Read(props["ssl.ca.location"], input.MaxClientFileBytes)
		if err != nil {
			return nil, fmt.Errorf("ssl.ca.location: %w", err)
		}
		caPEM = b
	case props["ssl.truststore.certificates"] != "":
		caPEM = []byte(props["ssl.truststore.certificates"])
	case props["ssl.truststore.location"] != "":
		pool, err := tlsstore.TrustStore(props, "")
		if err != nil {
			return nil, err
		}
		tc.RootCAs = pool
	}
	if caPEM != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, errors.New("ssl CA: no PEM certificate found")
		}
		tc.RootCAs = pool
	}

	switch {
	case props["ssl.certificate.location"] != "" || props["ssl.key.location"] != "":
		c, err := input.Read(props["ssl.certificate.location"], input.MaxClientFileBytes)
		if err != nil {
			return nil, fmt.Errorf("ssl.certificate.location: %w", err)
		}
		k, err := input.Read(props["ssl.key.location"], input.MaxClientFileBytes)
		if err != nil {
			return nil, fmt.Errorf("ssl.key.location: %w", err)
		}
		cert, err := tlsstore.PEMPair(c, k)
		if err != nil {
			return nil, err
		}
		tc.Certificates = []tls.Certificate{cert}
	case props["ssl.keystore.certificate.chain"] != "" || props["ssl.keystore.key"] != "":
		cert, err := tlsstore.PEMPair([]byte(props["ssl.keystore.certificate.chain"]), []byte(props["ssl.keystore.key"]))
		if err != nil {
			return nil, err
		}
		tc.Certificates = []tls.Certificate{cert}
	case props["ssl.keystore.location"] != "":
		cert, err := tlsstore.KeyStore(props, "")
		if err != nil {
			return nil, err
		}
		tc.Certificates = []tls.Certificate{cert}
	}

	algo, set := props["ssl.endpoint.identification.algorithm"]
	if set && strings.TrimSpace(algo) == "" {
		// Verify the chain, not the host name (Kafka's "" setting).
		roots := tc.RootCAs
		tc.InsecureSkipVerify = true
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("verify broker certificate: none presented")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			if err != nil {
				return fmt.Errorf("verify broker certificate: %w", err)
			}
			return nil
		}
	}
	return tc, nil
}
