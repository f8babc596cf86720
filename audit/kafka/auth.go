package kafka

import (
	"context"
	"errors"
	"fmt"
	"github.com/kaudit/kaudit/internal/input"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/aws"
	"github.com/twmb/franz-go/pkg/sasl/kerberos"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// The login modules of sasl.jaas.config and the mechanism each implies.
var loginModules = map[string]string{
	"org.apache.kafka.common.security.plain.PlainLoginModule":             "PLAIN",
	"org.apache.kafka.common.security.scram.ScramLoginModule":             "SCRAM",
	"org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule": "OAUTHBEARER",
	"com.sun.security.auth.module.Krb5LoginModule":                        "GSSAPI",
	"com.ibm.security.auth.module.Krb5LoginModule":                        "GSSAPI",
	"software.amazon.msk.auth.iam.IAMLoginModule":                         "AWS_MSK_IAM",
}

// moduleMechanism is the mechanism a login module implies ("" for none).
func moduleMechanism(module string) (string, bool) {
	if module == "" {
		return "", true
	}
	if m, ok := loginModules[module]; ok {
		return m, true
	}
	// a shaded or relocated class keeps its simple name
	for full, m := range loginModules {
		if strings.HasSuffix(module, full[strings.LastIndexByte(full, '.'):]) {
			return m, true
		}
	}
	return "", false
}

// oauthMechanism is SASL/OAUTHBEARER with KIP-768's client credentials:
// sasl.oauthbearer.token.endpoint.url (an http(s) URL, or a file:// URL of
// a token file read at every login), clientId, clientSecret and scope from
// the OAuthBearerLoginModule's options (scope also from
// sasl.oauthbearer.scope), and extension_NAME options as SASL extensions.
// A token is reused until shortly before it expires.
func oauthMechanism(props map[string]string, j jaasConfig) (sasl.Mechanism, error) {
	const endpointProp = "sasl.oauthbearer.token.endpoint.url"
	endpoint := strings.TrimSpace(props[endpointProp])
	if endpoint == "" {
		return nil, errors.New("sasl.mechanism OAUTHBEARER needs " + endpointProp + " (the token endpoint, KIP-768): kaudit cannot run a login callback handler class")
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "file") {
		return nil, errors.New(endpointProp + ": want an http, https or file URL")
	}
	ext := map[string]string{}
	for k, v := range j.options {
		if name, ok := strings.CutPrefix(k, "extension_"); ok {
			ext[name] = v
		}
	}
	if len(ext) == 0 {
		ext = nil
	}
	if u.Scheme == "file" {
		path := u.Path
		return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			b, err := input.Read(path, input.MaxClientFileBytes)
			if err != nil {
				return oauth.Auth{}, fmt.Errorf("read the OAuth token of %s: %w", endpointProp, err)
			}
			return oauth.Auth{Token: strings.TrimSpace(string(b)), Extensions: ext}, nil
		}), nil
	}
	id, secret := j.options["clientId"], j.options["clientSecret"]
	if id == "" || secret == "" {
		return nil, errors.New("sasl.mechanism OAUTHBEARER needs clientId and clientSecret in sasl.jaas.config (OAuthBearerLoginModule's options)")
	}
	scope := j.options["scope"]
	if s := strings.TrimSpace(props["sasl.oauthbearer.scope"]); s != "" {
		scope = s
	}
	cc := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: endpoint,
		Scopes: strings.Fields(strings.ReplaceAll(scope, ",", " ")), AuthStyle: oauth2.AuthStyleInHeader}
	hc := &http.Client{Timeout: 30 * time.Second}
	var mu sync.Mutex
	var tok *oauth2.Token
	return oauth.Oauth(func(ctx context.Context) (oauth.Auth, error) {
		mu.Lock()
		defer mu.Unlock()
		if tok == nil || !tok.Valid() {
			t, err := cc.Token(context.WithValue(ctx, oauth2.HTTPClient, hc))
			if err != nil {
				return oauth.Auth{}, tokenError(err)
			}
			tok = t
		}
		return oauth.Auth{Token: tok.AccessToken, Extensions: ext}, nil
	}), nil
}

// tokenError says why the token endpoint refused, by status and OAuth
// error code only: its body may echo what was sent.
func tokenError(err error) error {
	const what = "fetch an OAuth token from sasl.oauthbearer.token.endpoint.url"
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		code := ""
		if re.ErrorCode != "" {
			code = " (" + re.ErrorCode + ")"
		}
		if re.Response != nil {
			return fmt.Errorf("%s: HTTP %d%s", what, re.Response.StatusCode, code)
		}
		return fmt.Errorf("%s: refused%s", what, code)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", what, ue.Err)
	}
	return fmt.Errorf("%s: the answer is not a token", what)
}

// kerberosMechanism is SASL/GSSAPI from a Krb5LoginModule entry:
// useKeyTab=true with keyTab and principal, or useTicketCache=true (the
// cache at ticketCache, $KRB5CCNAME or /tmp/krb5cc_UID). The service name
// is sasl.kerberos.service.name (or the serviceName option); krb5.conf is
// $KRB5_CONFIG, else /etc/krb5.conf.
func kerberosMechanism(props map[string]string, j jaasConfig) (sasl.Mechanism, error) {
	if j.module == "" {
		return nil, errors.New("sasl.mechanism GSSAPI (Kafka's default) needs sasl.jaas.config with com.sun.security.auth.module.Krb5LoginModule (useKeyTab=true keyTab=… principal=…, or useTicketCache=true)")
	}
	service := strings.TrimSpace(props["sasl.kerberos.service.name"])
	if service == "" {
		service = j.options["serviceName"]
	}
	if service == "" {
		return nil, errors.New("sasl.mechanism GSSAPI needs sasl.kerberos.service.name (the brokers' Kerberos service, usually kafka)")
	}
	confPath := os.Getenv("KRB5_CONFIG")
	if confPath == "" {
		confPath = "/etc/krb5.conf"
	}
	cfg, err := config.Load(confPath)
	if err != nil {
		return nil, fmt.Errorf("GSSAPI: read krb5.conf %s ($KRB5_CONFIG): %w", confPath, err)
	}
	settings := client.DisablePAFXFAST(true)
	var cl *client.Client
	switch {
	case strings.EqualFold(j.options["useKeyTab"], "true"):
		ktPath, principal := j.options["keyTab"], j.options["principal"]
		if ktPath == "" || principal == "" {
			return nil, errors.New("GSSAPI: useKeyTab=true needs keyTab and principal in sasl.jaas.config")
		}
		kt, err := keytab.Load(ktPath)
		if err != nil {
			return nil, fmt.Errorf("GSSAPI: read keyTab %s: %w", ktPath, err)
		}
		user, realm, ok := strings.Cut(principal, "@")
		if !ok {
			realm = cfg.LibDefaults.DefaultRealm
		}
		cl = client.NewWithKeytab(user, realm, kt, cfg, settings)
	case strings.EqualFold(j.options["useTicketCache"], "true"):
		path := j.options["ticketCache"]
		if path == "" {
			path = strings.TrimPrefix(os.Getenv("KRB5CCNAME"), "FILE:")
		}
		if path == "" {
			path = fmt.Sprintf("/tmp/krb5cc_%d", os.Getuid())
		}
		cc, err := credentials.LoadCCache(path)
		if err != nil {
			return nil, fmt.Errorf("GSSAPI: read the ticket cache %s: %w", path, err)
		}
		if cl, err = client.NewFromCCache(cc, cfg, settings); err != nil {
			return nil, fmt.Errorf("GSSAPI: use the ticket cache %s: %w", path, err)
		}
	default:
		return nil, errors.New("GSSAPI: sasl.jaas.config needs useKeyTab=true (with keyTab and principal) or useTicketCache=true")
	}
	return kerberos.Auth{Client: cl, Service: service}.AsMechanismWithClose(), nil
}

// awsMechanism is SASL/AWS_MSK_IAM, signed with the credentials of
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, read at
// every login (so a rotated session token is picked up). Profiles,
// instance roles and web identity are not read: export them first.
func awsMechanism(j jaasConfig) (sasl.Mechanism, error) {
	if p := j.options["awsProfileName"]; p != "" {
		return nil, errors.New("AWS_MSK_IAM: awsProfileName is not read; export the profile's credentials (aws configure export-credentials --format env) as AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN")
	}
	creds := func() (aws.Auth, error) {
		a := aws.Auth{AccessKey: os.Getenv("AWS_ACCESS_KEY_ID"), SecretKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
			SessionToken: os.Getenv("AWS_SESSION_TOKEN"), UserAgent: "kaudit"}
		if a.AccessKey == "" || a.SecretKey == "" {
			return aws.Auth{}, errors.New("AWS_MSK_IAM needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for a role) in the environment")
		}
		return a, nil
	}
	if _, err := creds(); err != nil {
		return nil, err
	}
	return aws.ManagedStreamingIAM(func(context.Context) (aws.Auth, error) { return creds() }), nil
}
