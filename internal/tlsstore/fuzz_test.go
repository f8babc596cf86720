package tlsstore

import (
	"strings"
	"testing"
)

// FuzzStores: any bytes as a trust or key store of any type kaudit reads
// are refused or read, never a panic, and an error never shows the
// password.
func FuzzStores(f *testing.F) {
	f.Add([]byte{0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2, 0, 0, 0, 1}, uint8(0))
	f.Add([]byte("0\x82\x01\x00"), uint8(1))
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), uint8(2))
	f.Add([]byte{}, uint8(0))
	const pw = "fuzz-s3cret"
	f.Fuzz(func(t *testing.T, b []byte, n uint8) {
		typ := []string{"JKS", "PKCS12", "PEM"}[int(n)%3]
		if _, err := trustFrom(b, typ, pw, "ssl.truststore.location", ""); err != nil && strings.Contains(err.Error(), pw) {
			t.Errorf("err %q shows the password", err)
		}
		if _, err := keyFrom(b, typ, pw, pw, "ssl.keystore.location", ""); err != nil && strings.Contains(err.Error(), pw) {
			t.Errorf("err %q shows the password", err)
		}
	})
}
