// Package tlsstore reads the trust and key stores of Java client settings
// (ssl.truststore.*, ssl.keystore.*, ssl.key.password): JKS, PKCS12 and
// PEM, as a Kafka client and Confluent's Schema Registry client read them.
// Errors name properties, never passwords.
package tlsstore

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"github.com/kaudit/kaudit/internal/input"
	"os"
	"strings"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// jksMagic starts every JKS file. Java's "JKS" store type also reads
// PKCS12 files (keytool writes PKCS12 by default since Java 9), so the
// format is told from the bytes, as Java's keystore.type.compat does.
var jksMagic = []byte{0xfe, 0xed, 0xfe, 0xed}

// maxStoreBytes bounds a trust or key store read from disk.
const maxStoreBytes = 4 << 20

// readStore reads the store file that property names, bounded.
func readStore(prop, path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", prop, err)
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxStoreBytes {
		return nil, fmt.Errorf("%s: not a regular file of at most %d bytes", prop, maxStoreBytes)
	}
	b, err := input.Read(path, input.MaxClientFileBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", prop, err)
	}
	return b, nil
}

// storeType is the declared type of a store (Java's default JKS), checked
// against the ones kaudit reads.
func storeType(props map[string]string, prop string) (string, error) {
	t := strings.ToUpper(strings.TrimSpace(props[prop]))
	switch t {
	case "":
		return "JKS", nil
	case "JKS", "PKCS12", "PEM":
		return t, nil
	}
	return "", fmt.Errorf("%s %q: want JKS, PKCS12 or PEM", prop, t)
}

// TrustStore returns the CA certificates of prefix+ssl.truststore.location
// (prefix is "" for Kafka's own, "schema.registry." for the registry's):
// PEM, JKS (its trusted certificate entries, and the chains of its key
// entries) or PKCS12 (its certificates). prefix+ssl.truststore.password
// opens JKS and PKCS12 stores; prefix+ssl.truststore.type says which,
// Java's default JKS when unset, though the format is told from the bytes.
func TrustStore(props map[string]string, prefix string) (*x509.CertPool, error) {
	loc := prefix + "ssl.truststore.location"
	typ, err := storeType(props, prefix+"ssl.truststore.type")
	if err != nil {
		return nil, err
	}
	b, err := readStore(loc, props[loc])
	if err != nil {
		return nil, err
	}
	return trustFrom(b, typ, props[prefix+"ssl.truststore.password"], loc, prefix)
}

// trustFrom reads trust store bytes b of the declared type.
func trustFrom(b []byte, typ, pass, loc, prefix string) (*x509.CertPool, error) {
	var err error
	pool := x509.NewCertPool()
	if typ == "PEM" {
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("%s: no PEM certificate found", loc)
		}
		return pool, nil
	}
	var certs []*x509.Certificate
	if bytes.HasPrefix(b, jksMagic) {
		if pass == "" {
			return nil, fmt.Errorf("%s: a JKS store needs %sssl.truststore.password (its integrity check)", loc, prefix)
		}
		ks := keystore.New()
		if err := ks.Load(bytes.NewReader(b), []byte(pass)); err != nil {
			return nil, fmt.Errorf("%s: not a JKS store this password opens", loc)
		}
		for _, a := range ks.Aliases() {
			var ders [][]byte
			switch {
			case ks.IsTrustedCertificateEntry(a):
				e, err := ks.GetTrustedCertificateEntry(a)
				if err != nil {
					return nil, fmt.Errorf("%s: entry %q: %w", loc, a, err)
				}
				ders = append(ders, e.Certificate.Content)
			case ks.IsPrivateKeyEntry(a):
				// a key store used as a trust store: Java trusts its chains' certificates
				chain, err := ks.GetPrivateKeyEntryCertificateChain(a)
				if err != nil {
					return nil, fmt.Errorf("%s: entry %q: %w", loc, a, err)
				}
				for _, c := range chain {
					ders = append(ders, c.Content)
				}
			}
			for _, der := range ders {
				c, err := x509.ParseCertificate(der)
				if err != nil {
					return nil, fmt.Errorf("%s: entry %q: %w", loc, a, err)
				}
				certs = append(certs, c)
			}
		}
	} else {
		if certs, err = pkcs12.DecodeTrustStore(b, pass); err != nil {
			// a PKCS12 file with a key (a key store as trust store)
			_, leaf, cas, kerr := pkcs12.DecodeChain(b, pass)
			if kerr != nil {
				return nil, fmt.Errorf("%s: not a PKCS12 trust store this password opens", loc)
			}
			certs = append([]*x509.Certificate{leaf}, cas...)
		}
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s: the store holds no certificate", loc)
	}
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// KeyStore returns the client certificate of prefix+ssl.keystore.location:
// PEM (certificate chain and key in one file), JKS or PKCS12 (its one
// private key entry). prefix+ssl.keystore.password opens the store;
// prefix+ssl.key.password the key, defaulting to the store's password as in
// Java.
func KeyStore(props map[string]string, prefix string) (tls.Certificate, error) {
	loc := prefix + "ssl.keystore.location"
	typ, err := storeType(props, prefix+"ssl.keystore.type")
	if err != nil {
		return tls.Certificate{}, err
	}
	b, err := readStore(loc, props[loc])
	if err != nil {
		return tls.Certificate{}, err
	}
	return keyFrom(b, typ, props[prefix+"ssl.keystore.password"], props[prefix+"ssl.key.password"], loc, prefix)
}

// keyFrom reads key store bytes b of the declared type.
func keyFrom(b []byte, typ, pass, keyPass, loc, prefix string) (tls.Certificate, error) {
	if typ == "PEM" {
		return PEMPair(b, b)
	}
	if keyPass == "" {
		keyPass = pass
	}
	if bytes.HasPrefix(b, jksMagic) {
		ks := keystore.New()
		if err := ks.Load(bytes.NewReader(b), []byte(pass)); err != nil {
			return tls.Certificate{}, fmt.Errorf("%s: not a JKS store %sssl.keystore.password opens", loc, prefix)
		}
		var keys []string
		for _, a := range ks.Aliases() {
			if ks.IsPrivateKeyEntry(a) {
				keys = append(keys, a)
			}
		}
		if len(keys) != 1 {
			return tls.Certificate{}, fmt.Errorf("%s: the store holds %d private keys, want exactly one", loc, len(keys))
		}
		e, err := ks.GetPrivateKeyEntry(keys[0], []byte(keyPass))
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("%s: the key of entry %q does not open with %sssl.key.password (or the store's password)", loc, keys[0], prefix)
		}
		key, err := x509.ParsePKCS8PrivateKey(e.PrivateKey)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("%s: entry %q: the private key is not PKCS#8", loc, keys[0])
		}
		cert := tls.Certificate{PrivateKey: key}
		for _, c := range e.CertificateChain {
			cert.Certificate = append(cert.Certificate, c.Content)
		}
		return checkedPair(cert)
	}
	key, leaf, cas, err := pkcs12.DecodeChain(b, pass)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: not a PKCS12 key store %sssl.keystore.password opens", loc, prefix)
	}
	cert := tls.Certificate{PrivateKey: key, Certificate: [][]byte{leaf.Raw}}
	for _, c := range cas {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	return checkedPair(cert)
}

// checkedPair checks that the chain's leaf goes with the key, as
// tls.X509KeyPair does for PEM.
func checkedPair(c tls.Certificate) (tls.Certificate, error) {
	if len(c.Certificate) == 0 {
		return tls.Certificate{}, errors.New("ssl client certificate: the key entry has no certificate")
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]})
	der, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		return tls.Certificate{}, errors.New("ssl client certificate: the private key's type is not supported")
	}
	if _, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})); err != nil {
		return tls.Certificate{}, errors.New("ssl client certificate: the certificate does not go with the key")
	}
	return c, nil
}

// PEMPair is a PEM certificate chain and key, refusing an encrypted key.
func PEMPair(certPEM, keyPEM []byte) (tls.Certificate, error) {
	if isEncryptedKey(keyPEM) {
		return tls.Certificate{}, errors.New("ssl client key: encrypted private keys are not supported; decrypt it (openssl pkey)")
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// The crypto error can describe the key; do not repeat it.
		return tls.Certificate{}, errors.New("ssl client certificate: the certificate and key are not a valid PEM pair")
	}
	return cert, nil
}

func isEncryptedKey(b []byte) bool {
	for len(b) > 0 {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return false
		}
		if blk.Type == "ENCRYPTED PRIVATE KEY" || blk.Headers["Proc-Type"] != "" {
			return true
		}
	}
	return false
}
