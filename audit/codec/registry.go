package codec

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kaudit/kaudit/internal/input"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kaudit/kaudit/internal/tlsstore"
)

// Defaults of the registry client.
const (
	DefaultTimeout = 10 * time.Second
	DefaultRetries = 2
	DefaultBackoff = 200 * time.Millisecond
	maxBackoff     = 5 * time.Second
	maxAnswer      = 16 << 20 // bytes read from one registry answer
	maxRefDepth    = 32       // nested schema references
)

// registryClient reads schemas from a Confluent Schema Registry over REST.
type registryClient struct {
	bases   []string // base URLs without credentials or trailing slash
	auth    string   // Authorization header value, or ""
	http    *http.Client
	timeout time.Duration
	retries int
	backoff time.Duration
}

// schemaAnswer is the JSON of GET /schemas/ids/{id} and of
// GET /subjects/{s}/versions/{v}.
type schemaAnswer struct {
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType"`
	References []reference `json:"references"`
}

type reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// confluentError is the registry's error JSON.
type confluentError struct {
	Code    int    `json:"error_code"`
	Message string `json:"message"`
}

// notFoundError is a 404 from the registry.
type notFoundError struct {
	url  string
	code int
	msg  string
}

func (e *notFoundError) Error() string {
	s := "schema registry " + e.url + ": HTTP 404"
	if e.code != 0 {
		s += ": " + strconv.Itoa(e.code)
	}
	if e.msg != "" {
		s += " " + e.msg
	}
	return s
}

// retryable marks an error a later attempt may not get.
type retryable struct{ err error }

func (r *retryable) Error() string { return r.err.Error() }

func prop(props map[string]string, key string) string {
	if v, ok := props["schema.registry."+key]; ok {
		return strings.TrimSpace(v)
	}
	return strings.TrimSpace(props[key])
}

var jaasField = regexp.MustCompile(`(username|password)\s*=\s*"([^"]*)"`)

func newRegistryClient(cfg Config) (*registryClient, error) {
	r := &registryClient{timeout: cfg.Timeout, retries: cfg.Retries, backoff: cfg.Backoff}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	switch {
	case r.retries == 0:
		r.retries = DefaultRetries
	case r.retries < 0:
		r.retries = 0
	}
	if r.backoff <= 0 {
		r.backoff = DefaultBackoff
	}
	var urlUser *url.Userinfo
	https := false
	for _, raw := range strings.Split(cfg.RegistryURL, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			// url.Parse's error would repeat the URL and any password in it.
			return nil, errors.New("parse schema registry URL: want http(s)://host[:port][/path]")
		}
		if u.User != nil {
			urlUser = u.User
			u.User = nil
		}
		https = https || u.Scheme == "https"
		u.RawQuery, u.Fragment = "", ""
		r.bases = append(r.bases, strings.TrimRight(u.String(), "/"))
	}
	if len(r.bases) == 0 {
		return nil, errors.New("parse schema registry URL: empty")
	}
	props := cfg.Properties
	if err := r.setAuth(props, urlUser); err != nil {
		return nil, err
	}
	tlsConf, err := tlsConfig(props, https)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConf
	tr.MaxIdleConnsPerHost = 4
	r.http = &http.Client{Transport: tr}
	return r, nil
}

func (r *registryClient) setAuth(props map[string]string, urlUser *url.Userinfo) error {
	if prop(props, "bearer.auth.credentials.source") != "" || prop(props, "bearer.auth.token") != "" {
		src := strings.ToUpper(prop(props, "bearer.auth.credentials.source"))
		tok := prop(props, "bearer.auth.token")
		if (src != "" && src != "STATIC_TOKEN") || tok == "" {
			return errors.New("configure schema registry auth: only bearer.auth.credentials.source=STATIC_TOKEN with bearer.auth.token is supported")
		}
		r.auth = "Bearer " + tok
		return nil
	}
	source := strings.ToUpper(prop(props, "basic.auth.credentials.source"))
	info := prop(props, "basic.auth.user.info")
	if source == "" {
		switch {
		case info != "":
			source = "USER_INFO"
		case urlUser != nil:
			source = "URL"
		default:
			return nil
		}
	}
	var user, pass string
	switch source {
	case "USER_INFO":
		u, p, ok := strings.Cut(info, ":")
		if !ok || u == "" {
			return errors.New("configure schema registry auth: basic.auth.user.info must be user:password")
		}
		user, pass = u, p
	case "URL":
		if urlUser == nil {
			return errors.New("configure schema registry auth: basic.auth.credentials.source=URL but the URL has no user:password@")
		}
		user = urlUser.Username()
		pass, _ = urlUser.Password()
	case "SASL_INHERIT":
		user, pass = strings.TrimSpace(props["sasl.username"]), strings.TrimSpace(props["sasl.password"])
		for _, m := range jaasField.FindAllStringSubmatch(props["sasl.jaas.config"], -1) {
			if m[1] == "username" {
				user = m[2]
			} else {
				pass = m[2]
			}
		}
		if user == "" {
			return errors.New("configure schema registry auth: SASL_INHERIT needs sasl.jaas.config or sasl.username/sasl.password")
		}
	default:
		return fmt.Errorf("configure schema registry auth: basic.auth.credentials.source %q is not supported (USER_INFO, URL, SASL_INHERIT)", source)
	}
	req := http.Request{Header: http.Header{}}
	req.SetBasicAuth(user, pass)
	r.auth = req.Header.Get("Authorization")
	return nil
}

// tlsConfig builds the registry client's TLS settings: trusted CAs from
// ssl.ca.location (PEM) or schema.registry.ssl.truststore.location (JKS,
// PKCS12 or PEM, as Confluent's client reads it); a client certificate
// from ssl.certificate.location with ssl.key.location (PEM) or
// schema.registry.ssl.keystore.location. The PEM settings are also read
// under the schema.registry. prefix, which wins; the stores only under it,
// as Confluent's client does (Kafka's own trust store is not the
// registry's).
func tlsConfig(props map[string]string, https bool) (*tls.Config, error) {
	const prefix = "schema.registry."
	if !https {
		return nil, nil
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	switch ca := prop(props, "ssl.ca.location"); {
	case ca != "":
		pem, err := input.Read(ca, input.MaxClientFileBytes)
		if err != nil {
			return nil, fmt.Errorf("read schema registry CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("read schema registry CA %s: no PEM certificate", ca)
		}
		conf.RootCAs = pool
	case props[prefix+"ssl.truststore.location"] != "":
		pool, err := tlsstore.TrustStore(props, prefix)
		if err != nil {
			return nil, fmt.Errorf("configure schema registry TLS: %w", err)
		}
		conf.RootCAs = pool
	}
	cert, key := prop(props, "ssl.certificate.location"), prop(props, "ssl.key.location")
	switch {
	case cert != "" && key != "":
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("load schema registry client certificate: %w", err)
		}
		conf.Certificates = []tls.Certificate{pair}
	case cert != "" || key != "":
		return nil, errors.New("configure schema registry TLS: ssl.certificate.location and ssl.key.location go together")
	case props[prefix+"ssl.keystore.location"] != "":
		pair, err := tlsstore.KeyStore(props, prefix)
		if err != nil {
			return nil, fmt.Errorf("configure schema registry TLS: %w", err)
		}
		conf.Certificates = []tls.Certificate{pair}
	}
	return conf, nil
}

// get fetches path from the registry into out, retrying timeouts, 408, 429
// and 5xx with exponential backoff, and trying each base URL in turn.
func (r *registryClient) get(ctx context.Context, path string, out any) error {
	var last error
	for attempt := 0; attempt <= r.retries; attempt++ {
		if attempt > 0 {
			d := min(r.backoff<<(attempt-1), maxBackoff)
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		for _, base := range r.bases {
			err := r.once(ctx, base, path, out)
			if err == nil {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var re *retryable
			if !errors.As(err, &re) {
				return err
			}
			last = re.err
		}
	}
	return last
}

func (r *registryClient) once(ctx context.Context, base, path string, out any) error {
	rctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	where := base + path
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, where, nil)
	if err != nil {
		return &RegistryError{URL: where, Reason: "build request"}
	}
	req.Header.Set("Accept", "application/vnd.schemaregistry.v1+json, application/json")
	if r.auth != "" {
		req.Header.Set("Authorization", r.auth)
	}
	resp, err := r.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if rctx.Err() != nil {
			return &retryable{&RegistryError{URL: where, Reason: "no answer within " + r.timeout.String()}}
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its URL is where, without credentials; keep the cause only
		}
		return &retryable{&RegistryError{URL: where, Err: err}}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		reason := "read answer"
		if rctx.Err() != nil {
			reason = "no complete answer within " + r.timeout.String()
		}
		return &retryable{&RegistryError{URL: where, Status: resp.StatusCode, Reason: reason}}
	}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, out); err != nil {
			return &RegistryError{URL: where, Status: resp.StatusCode, Reason: "answer is not schema registry JSON"}
		}
		return nil
	}
	var ce confluentError
	_ = json.Unmarshal(body, &ce)
	msg := ce.Message
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	switch s := resp.StatusCode; {
	case s == http.StatusNotFound:
		return &notFoundError{url: where, code: ce.Code, msg: msg}
	case s == http.StatusRequestTimeout || s == http.StatusTooManyRequests || s >= 500:
		return &retryable{&RegistryError{URL: where, Status: s, Reason: msg}}
	default:
		return &RegistryError{URL: where, Status: s, Reason: msg}
	}
}
