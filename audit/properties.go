package audit

import (
	"fmt"
	"io"
	"maps"
	"strings"
	"unicode"

	"github.com/xrash/smetrics"
)

// ParseProperties reads a Java .properties file (a Kafka client config such
// as --command-config client.properties) into a map. It follows
// java.util.Properties.load: comment lines start with '#' or '!', a key ends
// at the first unescaped '=', ':' or whitespace, a line ending in an odd
// number of backslashes continues on the next one (whose leading whitespace
// is skipped), and the escapes \t \n \r \f \uXXXX are decoded; any other
// escaped character stands for itself. A later key wins over an earlier one.
//
// Errors name the line, never a value: values may be secrets.
func ParseProperties(r io.Reader) (map[string]string, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read properties: %w", err)
	}
	m := map[string]string{}
	p := propParser{in: string(data), line: 1}
	for {
		logical, line, ok := p.next()
		if !ok {
			break
		}
		k, v, err := splitProperty(logical)
		if err != nil {
			return nil, fmt.Errorf("parse properties line %d: %w", line, err)
		}
		m[k] = v
	}
	return m, nil
}

// propParser splits input into logical lines, joining continuations.
type propParser struct {
	in   string
	pos  int
	line int
}

func isPropSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

// natural returns the next natural line without its terminator.
func (p *propParser) natural() (string, bool) {
	if p.pos >= len(p.in) {
		return "", false
	}
	start := p.pos
	for p.pos < len(p.in) && p.in[p.pos] != '\n' && p.in[p.pos] != '\r' {
		p.pos++
	}
	s := p.in[start:p.pos]
	if p.pos < len(p.in) {
		if p.in[p.pos] == '\r' && p.pos+1 < len(p.in) && p.in[p.pos+1] == '\n' {
			p.pos++
		}
		p.pos++
		p.line++
	}
	return s, true
}

// next returns the next logical line (leading whitespace removed,
// continuations joined, escapes still encoded) and the line it starts on.
// Blank and comment lines are skipped.
func (p *propParser) next() (string, int, bool) {
	for {
		line := p.line
		s, ok := p.natural()
		if !ok {
			return "", 0, false
		}
		s = strings.TrimLeft(s, " \t\f")
		if s == "" || s[0] == '#' || s[0] == '!' {
			continue
		}
		var b strings.Builder
		for {
			if !continues(s) {
				b.WriteString(s)
				break
			}
			b.WriteString(s[:len(s)-1])
			more, ok := p.natural()
			if !ok {
				break
			}
			s = strings.TrimLeft(more, " \t\f")
		}
		return b.String(), line, true
	}
}

// continues reports whether s ends in an odd number of backslashes.
func continues(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits one logical line into its decoded key and value.
func splitProperty(s string) (string, string, error) {
	i := 0
	for i < len(s) {
		c := s[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || isPropSpace(c) {
			break
		}
		i++
	}
	i = min(i, len(s))
	rawKey := s[:i]
	j := i
	for j < len(s) && isPropSpace(s[j]) {
		j++
	}
	if j < len(s) && (s[j] == '=' || s[j] == ':') {
		j++
		for j < len(s) && isPropSpace(s[j]) {
			j++
		}
	}
	key, err := unescapeProperty(rawKey)
	if err != nil {
		return "", "", fmt.Errorf("key: %w", err)
	}
	val, err := unescapeProperty(s[j:])
	if err != nil {
		return "", "", fmt.Errorf("value of %q: %w", key, err)
	}
	return key, val, nil
}

func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break // a lone trailing backslash (continuation at end of input)
		}
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf("malformed \\uXXXX escape")
			}
			var r rune
			for _, h := range []byte(s[i+1 : i+5]) {
				var d byte
				switch {
				case h >= '0' && h <= '9':
					d = h - '0'
				case h >= 'a' && h <= 'f':
					d = h - 'a' + 10
				case h >= 'A' && h <= 'F':
					d = h - 'A' + 10
				default:
					return "", fmt.Errorf("malformed \\uXXXX escape")
				}
				r = r<<4 | rune(d)
			}
			b.WriteRune(r)
			i += 4
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// ApplyProperty sets one "key=value" setting (a --command-property flag) in
// m. Only the first '=' splits; whitespace around the key is trimmed, the
// value is kept as given. The error never repeats the value.
func ApplyProperty(m map[string]string, kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	k = strings.TrimSpace(k)
	if !ok {
		return fmt.Errorf("parse property: want key=value, found no '='")
	}
	if k == "" {
		return fmt.Errorf("parse property: empty key")
	}
	m[k] = v
	return nil
}

// Redacted replaces the value of a secret property in output.
const Redacted = "[redacted]"

// IsSecretKey reports whether a client property may hold a secret, to be
// redacted wherever kaudit prints properties (the report's command line).
// It errs towards redacting: a key holds a secret when, in any case,
//
//   - it contains one of secretWords (password, secret, token, key, jaas,
//     user.info, credential): so key.serializer, ssl.key.location and
//     ssl.keystore.type are redacted too, whose values are no secret,
//     because a property named for a key may hold one inline
//     (ssl.keystore.key) and a word catches the secrets no list names;
//   - it is within an edit distance of 2 of one of knownSecretKeys
//     (ssl.truststore.passwrd, sasl.jass.config): a misspelt secret
//     property is ignored by the client but still typed in clear;
//   - one of its words is a misspelling of password or credential (edit
//     distance 2) or of secret, passwd or token (1): my.pasword.
func IsSecretKey(k string) bool {
	k = strings.ToLower(strings.TrimSpace(k))
	for _, s := range secretWords {
		if strings.Contains(k, s) {
			return true
		}
	}
	for _, s := range knownSecretKeys {
		if smetrics.WagnerFischer(k, s, 1, 1, 1) <= 2 {
			return true
		}
	}
	for _, w := range strings.FieldsFunc(k, func(r rune) bool { return !unicode.IsLetter(r) }) {
		for s, d := range misspeltWords {
			if smetrics.WagnerFischer(w, s, 1, 1, 1) <= d {
				return true
			}
		}
	}
	return false
}

// secretWords make any property that contains one a secret (IsSecretKey).
var secretWords = []string{"password", "passwd", "secret", "token", "key", "jaas", "user.info", "credential"}

// knownSecretKeys are the secret properties of Kafka's and the Schema
// Registry's clients that kaudit reads; a key near one is one misspelt.
var knownSecretKeys = []string{
	"ssl.key.password", "ssl.keystore.password", "ssl.truststore.password", "ssl.keystore.key",
	"sasl.jaas.config", "sasl.password", "sasl.oauthbearer.client.secret",
	"basic.auth.user.info", "schema.registry.basic.auth.user.info",
	"schema.registry.ssl.key.password", "schema.registry.ssl.keystore.password", "schema.registry.ssl.truststore.password",
}

// misspeltWords are the words whose misspellings, by up to this many
// edits, make a key a secret (a short word by fewer: token is one edit
// from taken, two from topic).
var misspeltWords = map[string]int{"password": 2, "credential": 2, "secret": 1, "passwd": 1, "token": 1}

// RedactProperties returns a copy of m with every secret value replaced by
// Redacted, safe to print.
func RedactProperties(m map[string]string) map[string]string {
	out := maps.Clone(m)
	if out == nil {
		return map[string]string{}
	}
	for k := range out {
		if IsSecretKey(k) {
			out[k] = Redacted
		}
	}
	return out
}
