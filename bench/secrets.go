package bench

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// SecretSample is one labelled secret of the redaction corpus: a text as a
// session would hold it, and the secret inside it that redaction must
// remove. Secrets and texts are made by SecretCorpus from a seed, to each
// format's published shape; none is copied from anywhere, and none is a
// working credential.
type SecretSample struct {
	Kind   string `json:"kind"`
	Secret string `json:"-"` // what must not survive redaction
	Text   string `json:"-"`
}

// SecretKind is one kind of secret the corpus holds.
type SecretKind struct {
	Name string
	// Family groups kinds for the report (aws, github, database-url, ...).
	Family string
	gen    func(g *secretGen) (secret, text string)
}

// secretGen draws the random parts of a sample.
type secretGen struct{ rng *rand.Rand }

const (
	upper    = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	lower    = "abcdefghijklmnopqrstuvwxyz"
	digits   = "0123456789"
	alnum    = upper + lower + digits
	hexLower = "0123456789abcdef"
	b64      = alnum + "+/"
	b64url   = alnum + "-_"
	base32   = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
)

func (g *secretGen) from(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.rng.IntN(len(alphabet))]
	}
	return string(b)
}

func (g *secretGen) between(lo, hi int) int { return lo + g.rng.IntN(hi-lo+1) }

func (g *secretGen) pick(list ...string) string { return list[g.rng.IntN(len(list))] }

// password draws a password as people choose them: random characters of
// every class, or words joined with digits and a symbol.
func (g *secretGen) password() string {
	if g.rng.IntN(3) == 0 {
		w := []string{"Harbor", "violet", "Quartz", "ember", "Falcon", "meadow", "Orbit", "tundra", "Cobalt", "willow"}
		return w[g.rng.IntN(len(w))] + g.from(digits, g.between(2, 4)) + g.pick("!", "#", "$", "%", "&", "*", "?", "@") + w[g.rng.IntN(len(w))]
	}
	p := []byte(g.from(alnum+"!#$%&*+-=?^_~", g.between(12, 24)))
	// Every class at least once.
	p[0] = upper[g.rng.IntN(len(upper))]
	p[1] = digits[g.rng.IntN(len(digits))]
	p[2] = "!#$%&*+-=?^_~"[g.rng.IntN(13)]
	g.rng.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
	return string(p)
}

// urlPassword is a password as it appears in a URL: characters that need no
// escaping.
func (g *secretGen) urlPassword() string {
	p := []byte(g.from(alnum+"-_.~", g.between(12, 28)))
	p[0], p[1] = digits[g.rng.IntN(10)], upper[g.rng.IntN(26)]
	g.rng.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
	return string(p)
}

func (g *secretGen) user() string {
	return g.pick("app", "admin", "deploy", "svc_api", "postgres", "root", "analytics", "reporter", "ci-bot")
}

func (g *secretGen) host() string {
	return g.pick("db.internal", "10.0.3.17", "prod-db-1.example.net", "localhost", "pg.service.consul", "cluster0.x7k2p.mongodb.net", "cache-2.corp.lan")
}

// pem draws a PEM block of kind's label with a random body of n bytes.
func (g *secretGen) pem(label string, n int, escaped bool) (body, block string) {
	raw := make([]byte, n)
	for i := range raw {
		raw[i] = byte(g.rng.IntN(256))
	}
	enc := base64.StdEncoding.EncodeToString(raw)
	var lines []string
	for len(enc) > 64 {
		lines, enc = append(lines, enc[:64]), enc[64:]
	}
	lines = append(lines, enc)
	nl := "\n"
	if escaped {
		nl = `\n`
	}
	body = strings.Join(lines, nl)
	return body, "-----BEGIN " + label + "-----" + nl + body + nl + "-----END " + label + "-----"
}

// token places a token in one of the places tokens are pasted: an
// environment file, a shell export, JSON or YAML configuration, code, a
// header, a log line, prose.
func (g *secretGen) token(secret, envName string) string {
	switch g.rng.IntN(9) {
	case 0:
		return fmt.Sprintf("%s=%s\n", envName, secret)
	case 1:
		return fmt.Sprintf("export %s=\"%s\"", envName, secret)
	case 2:
		return fmt.Sprintf("{\n  \"%s\": \"%s\",\n  \"region\": \"eu-west-1\"\n}", strings.ToLower(envName), secret)
	case 3:
		return fmt.Sprintf("%s:\n  token: %s\n  retries: 3", strings.ToLower(envName), secret)
	case 4:
		return fmt.Sprintf("client = Client(api_key=\"%s\", timeout=30)", secret)
	case 5:
		return fmt.Sprintf("const key = '%s';\nconsole.log('connecting');", secret)
	case 6:
		return fmt.Sprintf("2024-05-02T10:11:12Z DEBUG using credentials %s for upload", secret)
	case 7:
		return fmt.Sprintf("I set the key to %s but the request still fails with 401. Any idea?", secret)
	}
	return fmt.Sprintf("$ cat .env\n%s=%s\nDEBUG=true", envName, secret)
}

// assignment places a secret that has no recognisable shape of its own
// where only its name gives it away.
func (g *secretGen) assignment(secret, name string) string {
	switch g.rng.IntN(7) {
	case 0:
		return fmt.Sprintf("%s=%s\n", strings.ToUpper(name), secret)
	case 1:
		return fmt.Sprintf("export %s='%s'", strings.ToUpper(name), secret)
	case 2:
		return fmt.Sprintf("{\"%s\": \"%s\", \"host\": \"%s\"}", name, secret, g.host())
	case 3:
		return fmt.Sprintf("database:\n  host: %s\n  %s: %s\n", g.host(), name, secret)
	case 4:
		return fmt.Sprintf("%s = \"%s\"", name, secret)
	case 5:
		return fmt.Sprintf("settings.%s = '%s'  # TODO move to vault", name, secret)
	}
	return fmt.Sprintf("[client]\n%s = %s\n", name, secret)
}

// SecretKinds are the kinds of the corpus, in report order.
func SecretKinds() []SecretKind {
	tok := func(name, family, env string, mk func(g *secretGen) string) SecretKind {
		return SecretKind{Name: name, Family: family, gen: func(g *secretGen) (string, string) {
			s := mk(g)
			return s, g.token(s, env)
		}}
	}
	assign := func(name, family string, names []string, mk func(g *secretGen) string) SecretKind {
		return SecretKind{Name: name, Family: family, gen: func(g *secretGen) (string, string) {
			s := mk(g)
			return s, g.assignment(s, names[g.rng.IntN(len(names))])
		}}
	}
	url := func(name, scheme, port string) SecretKind {
		return SecretKind{Name: name, Family: "database-url", gen: func(g *secretGen) (string, string) {
			pw := g.urlPassword()
			u := fmt.Sprintf("%s://%s:%s@%s%s/%s", scheme, g.user(), pw, g.host(), port, g.pick("app", "prod", "analytics", "0", "vhost1"))
			if scheme == "redis" && g.rng.IntN(2) == 0 {
				u = fmt.Sprintf("redis://:%s@%s:6379/0", pw, g.host())
			}
			return pw, g.pick(
				"DATABASE_URL="+u,
				"conn = connect(\""+u+"\")",
				"Error: connection refused for "+u,
				"url: "+u,
			)
		}}
	}
	pemKind := func(name, label string, n int) SecretKind {
		return SecretKind{Name: name, Family: "private-key", gen: func(g *secretGen) (string, string) {
			body, block := g.pem(label, n, false)
			return body, g.pick("$ cat ~/.ssh/id_key\n"+block+"\n", "Here is the key file:\n\n```\n"+block+"\n```", block)
		}}
	}
	return []SecretKind{
		tok("aws-access-key-id", "aws", "AWS_ACCESS_KEY_ID", func(g *secretGen) string { return g.pick("AKIA", "ASIA") + g.from(base32, 16) }),
		assign("aws-secret-access-key", "aws", []string{"aws_secret_access_key", "AWS_SECRET_ACCESS_KEY", "SecretAccessKey"}, func(g *secretGen) string { return g.from(b64, 40) }),
		tok("gcp-api-key", "gcp", "GOOGLE_API_KEY", func(g *secretGen) string { return "AIza" + g.from(b64url, 35) }),
		{Name: "gcp-service-account-key", Family: "gcp", gen: func(g *secretGen) (string, string) {
			body, block := g.pem("PRIVATE KEY", 1190, true)
			return body, fmt.Sprintf(`{"type": "service_account", "project_id": "demo-%s", "private_key_id": "%s", "private_key": "%s\n", "client_email": "svc@demo.iam.gserviceaccount.com"}`,
				g.from(lower, 6), g.from(hexLower, 40), block)
		}},
		tok("azure-ad-client-secret", "azure", "AZURE_CLIENT_SECRET", func(g *secretGen) string {
			return g.from(alnum+"_~.", 3) + g.from(digits, 1) + "Q~" + g.from(alnum+"_~.-", 34)
		}),
		{Name: "azure-storage-connection-string", Family: "azure", gen: func(g *secretGen) (string, string) {
			key := g.from(b64, 86) + "=="
			return key, fmt.Sprintf("AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=%s;AccountKey=%s;EndpointSuffix=core.windows.net", g.from(lower+digits, 12), key)
		}},
		tok("github-pat", "github", "GITHUB_TOKEN", func(g *secretGen) string { return "ghp_" + g.from(alnum, 36) }),
		tok("github-oauth-token", "github", "GH_OAUTH_TOKEN", func(g *secretGen) string { return "gho_" + g.from(alnum, 36) }),
		tok("github-app-token", "github", "GH_APP_TOKEN", func(g *secretGen) string { return g.pick("ghs_", "ghu_") + g.from(alnum, 36) }),
		tok("github-fine-grained-pat", "github", "GITHUB_PAT", func(g *secretGen) string {
			return "github_pat_11" + g.from(upper+digits, 20) + "_" + g.from(alnum, 59)
		}),
		tok("github-refresh-token", "github", "GH_REFRESH_TOKEN", func(g *secretGen) string { return "ghr_" + g.from(alnum, 36) }),
		tok("gitlab-pat", "gitlab", "GITLAB_TOKEN", func(g *secretGen) string { return "glpat-" + g.from(alnum+"_-", 20) }),
		tok("gitlab-runner-token", "gitlab", "RUNNER_TOKEN", func(g *secretGen) string { return "glrt-" + g.from(alnum+"_-", 20) }),
		tok("gitlab-trigger-token", "gitlab", "TRIGGER_TOKEN", func(g *secretGen) string { return "glptt-" + g.from(hexLower, 40) }),
		tok("openai-api-key", "openai", "OPENAI_API_KEY", func(g *secretGen) string {
			if g.rng.IntN(4) == 0 {
				return "sk-" + g.from(alnum, 20) + "T3BlbkFJ" + g.from(alnum, 20)
			}
			return "sk-" + g.pick("proj", "svcacct", "admin") + "-" + g.from(alnum+"_-", 74) + "T3BlbkFJ" + g.from(alnum+"_-", 74)
		}),
		tok("anthropic-api-key", "anthropic", "ANTHROPIC_API_KEY", func(g *secretGen) string {
			return "sk-ant-api03-" + g.from(alnum+"_-", 93) + "AA"
		}),
		tok("anthropic-admin-key", "anthropic", "ANTHROPIC_ADMIN_KEY", func(g *secretGen) string {
			return "sk-ant-admin01-" + g.from(alnum+"_-", 93) + "AA"
		}),
		tok("slack-bot-token", "slack", "SLACK_BOT_TOKEN", func(g *secretGen) string {
			return "xoxb-" + g.from(digits, 12) + "-" + g.from(digits, 13) + "-" + g.from(alnum, 24)
		}),
		tok("slack-user-token", "slack", "SLACK_USER_TOKEN", func(g *secretGen) string {
			return "xoxp-" + g.from(digits, 12) + "-" + g.from(digits, 12) + "-" + g.from(digits, 13) + "-" + g.from(hexLower, 32)
		}),
		tok("slack-app-token", "slack", "SLACK_APP_TOKEN", func(g *secretGen) string {
			return "xapp-1-A" + g.from(upper+digits, 10) + "-" + g.from(digits, 13) + "-" + g.from(hexLower, 64)
		}),
		{Name: "slack-webhook-url", Family: "slack", gen: func(g *secretGen) (string, string) {
			path := "T" + g.from(upper+digits, 8) + "/B" + g.from(upper+digits, 10) + "/" + g.from(alnum, 24)
			return path, g.pick("SLACK_WEBHOOK=https://hooks.slack.com/services/"+path, "curl -X POST -d '{\"text\":\"deploy done\"}' https://hooks.slack.com/services/"+path)
		}},
		tok("stripe-secret-key", "stripe", "STRIPE_SECRET_KEY", func(g *secretGen) string { return g.pick("sk_live_", "sk_test_") + g.from(alnum, g.between(24, 99)) }),
		tok("stripe-restricted-key", "stripe", "STRIPE_RESTRICTED_KEY", func(g *secretGen) string { return "rk_live_" + g.from(alnum, g.between(24, 99)) }),
		tok("twilio-api-key", "twilio", "TWILIO_API_KEY", func(g *secretGen) string { return "SK" + g.from(hexLower, 32) }),
		tok("sendgrid-api-key", "sendgrid", "SENDGRID_API_KEY", func(g *secretGen) string {
			return "SG." + g.from(alnum+"_-", 22) + "." + g.from(alnum+"_-", 43)
		}),
		tok("npm-token", "npm", "NPM_TOKEN", func(g *secretGen) string { return "npm_" + g.from(alnum, 36) }),
		tok("pypi-token", "pypi", "PYPI_TOKEN", func(g *secretGen) string { return "pypi-AgEIcHlwaS5vcmc" + g.from(b64url, g.between(60, 180)) }),
		{Name: "jwt", Family: "jwt", gen: func(g *secretGen) (string, string) {
			enc := base64.RawURLEncoding.EncodeToString
			head, _ := json.Marshal(map[string]string{"alg": g.pick("HS256", "RS256", "ES256"), "typ": "JWT"})
			body, _ := json.Marshal(map[string]any{"sub": g.from(digits, 10), "name": g.pick("Ada", "Lin", "Sam"), "iat": 1700000000 + g.rng.IntN(1e7), "scope": "read write"})
			sig := make([]byte, 32)
			for i := range sig {
				sig[i] = byte(g.rng.IntN(256))
			}
			t := enc(head) + "." + enc(body) + "." + enc(sig)
			return t, g.pick("Authorization: Bearer "+t, "{\"access_token\": \""+t+"\", \"expires_in\": 3600}", "token="+t, "the session cookie was "+t)
		}},
		pemKind("rsa-private-key", "RSA PRIVATE KEY", 1190),
		pemKind("ec-private-key", "EC PRIVATE KEY", 121),
		pemKind("openssh-private-key", "OPENSSH PRIVATE KEY", 400),
		pemKind("pkcs8-private-key", "PRIVATE KEY", 1216),
		pemKind("pgp-private-key", "PGP PRIVATE KEY BLOCK", 1800),
		url("postgres-url", "postgres", ":5432"),
		url("mysql-url", "mysql", ":3306"),
		url("mongodb-url", "mongodb+srv", ""),
		url("redis-url", "redis", ":6379"),
		url("amqp-url", "amqp", ":5672"),
		assign("password-assignment", "generic-password", []string{"password", "db_password", "DB_PASS", "admin_password", "passwd", "smtp_password", "PGPASSWORD"}, (*secretGen).password),
		assign("secret-assignment", "generic-secret", []string{"client_secret", "secret_key", "API_SECRET", "app_secret", "webhook_secret"}, func(g *secretGen) string { return g.from(alnum, g.between(24, 48)) }),
		assign("token-assignment", "generic-secret", []string{"api_token", "access_token", "AUTH_TOKEN", "refresh_token", "token"}, func(g *secretGen) string { return g.from(alnum+"_-", g.between(24, 48)) }),
		{Name: "password-flag", Family: "generic-password", gen: func(g *secretGen) (string, string) {
			pw := g.password()
			return pw, g.pick("$ mycli login --user admin --password "+pw, "pg_dump --host db --password '"+pw+"' app", "vault login -method=userpass username=ops password="+pw)
		}},
		{Name: "bearer-header", Family: "http-auth", gen: func(g *secretGen) (string, string) {
			t := g.from(alnum, g.between(32, 64))
			return t, g.pick("Authorization: Bearer "+t, "curl -H \"Authorization: Bearer "+t+"\" https://api.internal/v1/items", "headers = {\"Authorization\": \"Bearer "+t+"\"}")
		}},
		{Name: "basic-auth-header", Family: "http-auth", gen: func(g *secretGen) (string, string) {
			cred := base64.StdEncoding.EncodeToString([]byte(g.user() + ":" + g.password()))
			return cred, g.pick("Authorization: Basic "+cred, "req.Header.Set(\"Authorization\", \"Basic "+cred+"\")")
		}},
		tok("huggingface-token", "huggingface", "HF_TOKEN", func(g *secretGen) string { return "hf_" + g.from(upper+lower, 34) }),
		tok("digitalocean-token", "digitalocean", "DIGITALOCEAN_TOKEN", func(g *secretGen) string { return "dop_v1_" + g.from(hexLower, 64) }),
		tok("shopify-token", "shopify", "SHOPIFY_TOKEN", func(g *secretGen) string { return "shpat_" + g.from("abcdef"+digits, 32) }),
		tok("doppler-token", "doppler", "DOPPLER_TOKEN", func(g *secretGen) string { return "dp.pt." + g.from(alnum, 43) }),
		tok("databricks-token", "databricks", "DATABRICKS_TOKEN", func(g *secretGen) string { return "dapi" + g.from("abcdef"+digits, 32) }),
		tok("vault-token", "vault", "VAULT_TOKEN", func(g *secretGen) string { return "hvs." + g.from(alnum+"_-", 95) }),
		tok("age-secret-key", "age", "AGE_KEY", func(g *secretGen) string { return "AGE-SECRET-KEY-1" + g.from("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58) }),
		{Name: "private-span", Family: "private", gen: func(g *secretGen) (string, string) {
			s := "my " + g.pick("bank PIN", "home address", "passport number") + " is " + g.from(digits, 8)
			return s, "Remember this: <private>" + s + "</private> and then continue."
		}},
	}
}

// SecretCorpus makes perKind samples of every kind from seed: the same
// seed gives the same corpus.
func SecretCorpus(seed uint64, perKind int) []SecretSample {
	g := &secretGen{rng: rand.New(rand.NewPCG(seed, seed^0x5bd1e995))}
	var out []SecretSample
	for _, k := range SecretKinds() {
		for range perKind {
			s, t := k.gen(g)
			out = append(out, SecretSample{Kind: k.Name, Secret: s, Text: t})
		}
	}
	return out
}
