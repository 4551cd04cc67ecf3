package redact_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/redact"
)

func newRedactor(t *testing.T, o redact.Options) *redact.Redactor {
	t.Helper()
	r, err := redact.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestKinds redacts generated samples of every kind of the corpus and
// checks that each secret is gone and which rules took it.
func TestKinds(t *testing.T) {
	r := newRedactor(t, redact.Options{})
	want := map[string][]string{
		"aws-access-key-id":               {"aws-access-token"},
		"aws-secret-access-key":           {"aws-secret-access-key"},
		"gcp-api-key":                     {"gcp-api-key"},
		"gcp-service-account-key":         {"private-key"},
		"azure-ad-client-secret":          {"azure-ad-client-secret"},
		"azure-storage-connection-string": {"azure-storage-key"},
		"github-pat":                      {"github-pat"},
		"github-oauth-token":              {"github-oauth"},
		"github-app-token":                {"github-app-token"},
		"github-fine-grained-pat":         {"github-fine-grained-pat"},
		"github-refresh-token":            {"github-refresh-token"},
		"gitlab-pat":                      {"gitlab-pat"},
		"gitlab-runner-token":             {"gitlab-runner-authentication-token"},
		"gitlab-trigger-token":            {"gitlab-ptt"},
		"openai-api-key":                  {"openai-api-key"},
		"anthropic-api-key":               {"anthropic-api-key"},
		"anthropic-admin-key":             {"anthropic-admin-api-key"},
		"slack-bot-token":                 {"slack-bot-token"},
		"slack-user-token":                {"slack-user-token"},
		"slack-app-token":                 {"slack-app-token"},
		"slack-webhook-url":               {"slack-webhook-url"},
		"stripe-secret-key":               {"stripe-access-token"},
		"stripe-restricted-key":           {"stripe-access-token"},
		"twilio-api-key":                  {"twilio-api-key"},
		"sendgrid-api-key":                {"sendgrid-api-token"},
		"npm-token":                       {"npm-access-token"},
		"pypi-token":                      {"pypi-upload-token"},
		"jwt":                             {"jwt"},
		"rsa-private-key":                 {"private-key"},
		"ec-private-key":                  {"private-key"},
		"openssh-private-key":             {"private-key"},
		"pkcs8-private-key":               {"private-key"},
		"pgp-private-key":                 {"private-key"},
		"postgres-url":                    {"url-password"},
		"mysql-url":                       {"url-password"},
		"mongodb-url":                     {"url-password"},
		"redis-url":                       {"url-password"},
		"amqp-url":                        {"url-password"},
		"password-assignment":             {"generic-password", "generic-api-key"},
		"secret-assignment":               {"generic-api-key", "generic-password"},
		"token-assignment":                {"generic-api-key", "generic-password"},
		"password-flag":                   {"generic-password"},
		"bearer-header":                   {"bearer-token", "curl-auth-header"},
		"basic-auth-header":               {"basic-auth"},
		"huggingface-token":               {"huggingface-access-token"},
		"digitalocean-token":              {"digitalocean-pat"},
		"shopify-token":                   {"shopify-access-token"},
		"doppler-token":                   {"doppler-api-token"},
		"databricks-token":                {"databricks-api-token"},
		"vault-token":                     {"vault-service-token"},
		"age-secret-key":                  {"age-secret-key"},
		"private-span":                    {"private"},
	}
	samples := bench.SecretCorpus(7, 10)
	kinds := bench.SecretKinds()
	if len(kinds) < 30 || len(want) != len(kinds) {
		t.Fatalf("%d kinds in the corpus, %d in this table: keep them in step (at least 30)", len(kinds), len(want))
	}
	for _, k := range kinds {
		t.Run(k.Name, func(t *testing.T) {
			rules := want[k.Name]
			if rules == nil {
				t.Fatalf("kind %s has no row in the table", k.Name)
			}
			n := 0
			for _, s := range samples {
				if s.Kind != k.Name {
					continue
				}
				n++
				out, counts := r.String(s.Text)
				if strings.Contains(out, s.Secret) {
					t.Errorf("sample %d: the secret survived:\n%s", n, out)
				}
				for rule := range counts {
					if !slices.Contains(rules, rule) {
						t.Errorf("sample %d: redacted by %s, want one of %v:\n%s", n, rule, rules, out)
					}
				}
				for _, m := range redact.Markers(out) {
					if counts[m.Rule] == 0 {
						t.Errorf("sample %d: marker %s not counted (%v)", n, m.Rule, counts)
					}
				}
			}
			if n == 0 {
				t.Fatal("no samples")
			}
		})
	}
}

// TestProperties, seeded: texts mixing several generated secrets with prose
// and code are redacted completely, the counts add up to the markers, and
// redacting again changes nothing.
func TestProperties(t *testing.T) {
	r := newRedactor(t, redact.Options{})
	filler := []string{
		"Let me look at the failing test first.\n",
		"```go\nfunc (s *Server) key(id string) string { return s.prefix + id }\n```\n",
		"The token bucket refills at 200/s; see config.go for the password policy.\n",
		"$ go test ./... \nok  \tgithub.com/example/pkg\t0.412s\n",
		"Error: connect ECONNREFUSED 127.0.0.1:5432\n",
		"",
	}
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		samples := bench.SecretCorpus(seed, 3)
		rng.Shuffle(len(samples), func(i, j int) { samples[i], samples[j] = samples[j], samples[i] })
		for i := 0; i+4 <= len(samples); i += 4 {
			var b strings.Builder
			for _, s := range samples[i : i+4] {
				b.WriteString(filler[rng.IntN(len(filler))])
				b.WriteString(s.Text)
				b.WriteString("\n")
			}
			text := b.String()
			out, counts := r.String(text)
			for _, s := range samples[i : i+4] {
				if strings.Contains(out, s.Secret) {
					t.Fatalf("seed %d: %s survived in\n%s", seed, s.Kind, out)
				}
			}
			if len(redact.Markers(out)) != counts.Total() {
				t.Fatalf("seed %d: %d markers, counts %v", seed, len(redact.Markers(out)), counts)
			}
			again, c := r.String(out)
			if again != out || c != nil {
				t.Fatalf("seed %d: redacting again changed the text (%v):\n%s\n---\n%s", seed, c, out, again)
			}
		}
	}
}

// TestCleanTextUnchanged: text that only looks like secrets is left alone.
func TestCleanTextUnchanged(t *testing.T) {
	r := newRedactor(t, redact.Options{})
	for _, s := range []string{
		"The password must be at least 12 characters long.",
		"password: string;\ntoken?: string | null;",
		"token = get_token(request)\npassword = os.environ['DB_PASSWORD']",
		`const API_KEY = process.env.NEXT_PUBLIC_API_KEY;`,
		"export GITHUB_TOKEN=$GITHUB_TOKEN\nTOKEN=${{ secrets.NPM_TOKEN }}",
		"postgres://user:password@localhost:5432/app",
		`curl -H "Authorization: Bearer YOUR_TOKEN_HERE" https://api.example.com`,
		"BROWSER LOG: Loading conversation via API: 06da2a3d-8f6b-4609-a2b9-f8ff81045cf9",
		"modernc.org/token v1.1.0 h1:Xl7Ap9dKaEs5kLoOQeQmPWevfnk/DM5qcLcYlA8ys6Y=",
		"    --- PASS: TestParse/10KB_line_with_token_2 (0.00s)",
		`{"apiCallId":"msg_4b1a9c2e7f3d5e8a0b6c1d2e3f4a5b6c"}`,
		"$password = App::$_CONF->getValue('DB_PASSWORD');",
		"self.max_tokens = max_tokens\nself.overlap_tokens = overlap_tokens",
		"a key: value store; the access: read-only flag",
		"https://github.com/org/repo.git and git@github.com:org/repo.git",
		"",
	} {
		if out, c := r.String(s); out != s || c != nil {
			t.Errorf("changed (%v):\n%s\n->\n%s", c, s, out)
		}
	}
}

func TestPrivateSpans(t *testing.T) {
	r := newRedactor(t, redact.Options{})
	for _, tc := range []struct{ in, want string }{
		{"a <private>b</private> c", "a [redacted:private] c"},
		{"a <PRIVATE>b\nsecond line</Private> c <private>d</private>", "a [redacted:private] c [redacted:private]"},
		{"keep this <private>and hide the rest", "keep this [redacted:private]"},
		{"no tags here < private >", "no tags here < private >"},
	} {
		if got, _ := r.String(tc.in); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestJSON(t *testing.T) {
	r := newRedactor(t, redact.Options{})
	tok := "ghp_Q7xN2mK9pL4vR8tW1zY5cB3nH6jD0fGsA2eU"
	for _, tc := range []struct {
		name, in string
		gone     []string
		rules    []string
	}{
		{"string value", `{"command":"export GITHUB_TOKEN=` + tok + ` && gh pr list","timeout":30}`, []string{tok}, []string{"github-pat"}},
		{"name gives the value away", `{"db": {"password": "Tr0ub4dor&3xyz"}, "user": "bob"}`, []string{"Tr0ub4dor&3xyz"}, []string{"generic-password"}},
		{"array", `["AKIAQYLPMN5HHHFPZAM2", 3, true, null]`, []string{"AKIAQYLPMN5HHHFPZAM2"}, []string{"aws-access-token"}},
		{"escaped private span", `{"text":"\u003cprivate\u003ehidden stuff\u003c/private\u003e visible"}`, []string{"hidden stuff"}, []string{"private"}},
		{"not JSON", `not json AKIAQYLPMN5HHHFPZAM2`, []string{"AKIAQYLPMN5HHHFPZAM2"}, []string{"aws-access-token"}},
		{"escaped quotes around the secret", `{"command":"client = Client(api_key=\"AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW\")"}`, []string{"AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"}, []string{"gcp-api-key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, c := r.JSON([]byte(tc.in))
			for _, g := range tc.gone {
				if strings.Contains(string(out), g) {
					t.Errorf("%q survived: %s", g, out)
				}
			}
			if got := slices.Sorted(func(yield func(string) bool) {
				for k := range c {
					if !yield(k) {
						return
					}
				}
			}); !slices.Equal(got, tc.rules) {
				t.Errorf("rules %v, want %v", got, tc.rules)
			}
			if json.Valid([]byte(tc.in)) && !json.Valid(out) {
				t.Errorf("no longer valid JSON: %s", out)
			}
		})
	}
	clean := []byte(`{ "a" : [1, 2.5, "x\u00e9"], "b": {"c": null} }`)
	if out, c := r.JSON(clean); string(out) != string(clean) || c != nil {
		t.Errorf("a clean JSON text changed: %s", out)
	}
}

func TestMarkers(t *testing.T) {
	got := redact.Markers("a [redacted:github-pat] b [redacted:] c [redacted:x.y_z-1][redacted:private")
	want := []redact.Span{{Start: 2, End: 23, Rule: "github-pat"}, {Start: 40, End: 58, Rule: "x.y_z-1"}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestExtraRules(t *testing.T) {
	rules := `
[[rules]]
id = "acme-token"
description = "ACME internal token"
regex = '''\b(acme_[a-z0-9]{20})\b'''
keywords = ["acme_"]

[[rules]]
id = "github-pat"
regex = '''ghp_[0-9a-zA-Z]{10}'''
keywords = ["ghp_"]
`
	r := newRedactor(t, redact.Options{ExtraRules: []byte(rules), ExtraRulesName: "rules.toml"})
	out, c := r.String("deploy with acme_0123456789abcdefghij and ghp_0123456789")
	if out != "deploy with [redacted:acme-token] and [redacted:github-pat]" || c["acme-token"] != 1 {
		t.Fatalf("got %q %v", out, c)
	}
	if !slices.Contains(r.Rules(), "acme-token") || !slices.Contains(r.Rules(), redact.RulePrivate) {
		t.Errorf("Rules() = %v", r.Rules())
	}
	for _, tc := range []struct{ rules, want string }{
		{"[[rules]]\nid = \"bad\"\nregex = '''(unclosed'''\nkeywords = [\"x1\"]", "rule bad"},
		{"[[rules]]\nid = \"has space\"\nregex = '''x'''", "rule id"},
		{"[[rules]]\nid = \"short\"\nregex = '''x'''\nkeywords = [\"x\"]", "at least 2"},
		{"[[rules]]\nid = \"pathonly\"\npath = '''\\.env$'''", "no regex"},
		{"title = \"nothing\"", "no [[rules]]"},
		{"[[rules]\nid=", "rules.toml"},
	} {
		_, err := redact.New(redact.Options{ExtraRules: []byte(tc.rules), ExtraRulesName: "rules.toml"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one naming %q", tc.rules, err, tc.want)
		}
		if cerr := redact.CheckRules([]byte(tc.rules)); cerr == nil {
			t.Errorf("%q: CheckRules accepted it", tc.rules)
		}
	}
}

// TestConcurrent: one Redactor serves many goroutines (run with -race).
func TestConcurrent(t *testing.T) {
	r := newRedactor(t, redact.Options{})
	samples := bench.SecretCorpus(3, 2)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(samples); i += 8 {
				if out, _ := r.String(samples[i].Text); strings.Contains(out, samples[i].Secret) {
					errs <- fmt.Errorf("%s survived", samples[i].Kind)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
