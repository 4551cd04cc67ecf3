package redact

import (
	"encoding/base64"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Hindsight's own rules, for what gitleaks' rules leave out on purpose
// (they are tuned against false alarms in source trees, where a password
// in a config file with symbols and low entropy is rare and a test fixture
// is common): passwords assigned in configuration and shell commands,
// credentials in connection URLs, and bearer tokens in headers.
const (
	// RuleGenericPassword is a password, secret or token assigned a
	// plausible value: DB_PASSWORD=..., "password": "...", --token ...
	RuleGenericPassword = "generic-password"
	// RuleURLPassword is the password of a URL's user information:
	// postgres://user:PASSWORD@host/db and other connection strings.
	RuleURLPassword = "url-password"
	// RuleBearerToken is the credential of an HTTP Authorization header.
	RuleBearerToken = "bearer-token"
	// RuleBasicAuth is HTTP basic authentication's user:password, base64.
	RuleBasicAuth = "basic-auth"
	// RuleAWSSecretKey is an AWS secret access key.
	RuleAWSSecretKey = "aws-secret-access-key"
	// RuleAzureStorageKey is an Azure storage account key.
	RuleAzureStorageKey = "azure-storage-key"
	// RulePrivate marks a <private>...</private> span the user asked to keep
	// out of the store.
	RulePrivate = "private"
)

// assignedValue is a quoted or bare value; its groups are the secret.
// A bare value ends where an escaped newline (\n in JSON-quoted text)
// begins.
// A bare value must end there too, or at a quote or a delimiter; one
// followed by "(" is a call (App::getValue(...)), not a value.
const assignedValue = `(?:"([^"\r\n]{1,256})"|'([^'\r\n]{1,256})'|([^\s"'\x60,;()\[\]{}<>\\]{1,256})(?:[\s"'\x60,;)\]}>\\]|$))`

func ownRules() []*rule {
	return []*rule{
		{
			id: RuleGenericPassword, generic: true, assign: true,
			// A name holding one of the keywords, an operator, then a quoted
			// or bare value.
			re: regexp.MustCompile(`(?i)(?:pass|pwd|secret|token|api[_-]?key|access[_-]?key|auth[_-]?key|credential)` +
				`[\w.-]{0,20}["']?[ \t]{0,2}(?:=|:=|:|=>)[ \t]{0,2}` + assignedValue),
			keywords: []string{"pass", "pwd", "secret", "token", "apikey", "api_key", "api-key", "accesskey", "access_key", "access-key", "authkey", "auth_key", "auth-key", "credential"},
			valid:    plausiblePassword,
		},
		{
			// A command-line flag: --password VALUE.
			id: RuleGenericPassword, generic: true,
			re:       regexp.MustCompile(`(?i)--(?:password|passwd|pass|token|secret|api-key|apikey|auth-token)[ \t]+` + assignedValue),
			keywords: []string{"--password", "--passwd", "--pass", "--token", "--secret", "--api-key", "--apikey", "--auth-token"},
			valid:    plausiblePassword,
		},
		{
			id: RuleBearerToken, generic: true,
			re:       regexp.MustCompile(`(?i)bearer[ \t]+([A-Za-z0-9._~+/-]{20,}=*)`),
			keywords: []string{"bearer"},
			valid:    plausibleToken,
		},
		{
			// An Authorization header's credentials: "Authorization: Bearer
			// ...", or a header set in code, ("Authorization", "Token ...").
			id: RuleBearerToken, generic: true,
			re:       regexp.MustCompile(`(?i)authorization["']?[ \t]*[:=,][ \t]*["']?(?:bearer|token)[ \t]+([A-Za-z0-9._~+/-]{8,}=*)`),
			keywords: []string{"authorization"},
			valid:    plausibleToken,
		},
		{
			// HTTP basic credentials: base64 of user:password.
			id:       RuleBasicAuth,
			re:       regexp.MustCompile(`(?i)basic[ \t]+([A-Za-z0-9+/]{8,}={0,2})`),
			keywords: []string{"basic"},
			valid:    basicCredentials,
		},
		{
			// An Azure storage account's key, in its connection string.
			id:       RuleAzureStorageKey,
			re:       regexp.MustCompile(`(?i)accountkey[ \t]*=[ \t]*([A-Za-z0-9+/]{86}==)`),
			keywords: []string{"accountkey"},
		},
		// Two of gitleaks' rules miss keys of their own format: its OpenAI
		// rule ends with \b, which fails after a key ending in - or _, and
		// its Vault rule's allowlist (s\.[A-Za-z]{24}, unanchored) drops
		// an hvs. token holding 24 letters in a row. These take them under
		// the same ids.
		{
			id:       "openai-api-key",
			re:       regexp.MustCompile(`\b(sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{58,74}T3BlbkFJ[A-Za-z0-9_-]{58,74})(?:[^A-Za-z0-9_-]|$)`),
			keywords: []string{"t3blbkfj"},
		},
		{
			// AWS's secret access key: 40 base64 characters, found by its
			// name (gitleaks' default rules have only the key id).
			id:       RuleAWSSecretKey,
			re:       regexp.MustCompile(`(?i)secret[_-]?access[_-]?key["']?[ \t]*(?:=|:|=>)[ \t]*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)`),
			keywords: []string{"secret_access_key", "secretaccesskey", "secret-access-key"},
			entropy:  4,
		},
		{
			id:       "vault-service-token",
			re:       regexp.MustCompile(`\b(hvs\.[\w-]{90,120})(?:[^\w-]|$)`),
			keywords: []string{"hvs."},
		},
		{
			id: RuleURLPassword, keywords: []string{"://"},
			re:   regexp.MustCompile(`://`), // unused: find does the work
			find: urlPassword,
		},
	}
}

// placeholders are values that stand for a secret without being one.
var placeholders = []string{
	"example", "changeme", "change_me", "change-me", "placeholder", "dummy", "sample", "redacted",
	"your_", "your-", "yourpass", "<", "xxxx", "****", "....", "password", "passwd", "secret",
	"${", "{{", "null", "undefined", "none", "true", "false", "todo", "fixme",
}

// plausiblePassword vets an assigned value: at least 8 characters, not a
// reference to somewhere else ($VAR, {{ .x }}, os.environ[...], a call),
// not a path or URL, not a placeholder, and not a bare word or number:
// digits mixed with letters, or a symbol.
func plausiblePassword(v string) bool {
	if len(v) < 8 || len(v) > 256 || strings.HasPrefix(v, markerPrefix) || reference(v) {
		return false
	}
	if strings.ContainsAny(v, "()[]{} \t") || strings.Contains(v, "://") || strings.Contains(v, "::") || strings.Count(v, "/") > 1 {
		return false
	}
	for _, c := range v {
		if c < 0x20 || c == 0x7f || c == utf8.RuneError {
			return false // binary, not text someone typed
		}
	}
	low := strings.ToLower(v)
	for _, p := range placeholders {
		if strings.Contains(low, p) {
			return false
		}
	}
	var upper, lowers, digits, symbols int
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case 'A' <= c && c <= 'Z':
			upper++
		case 'a' <= c && c <= 'z':
			lowers++
		case '0' <= c && c <= '9':
			digits++
		case c == '.' || c == '_' || c == '-':
		case c < 0x80:
			symbols++
		}
	}
	letters := upper + lowers
	switch {
	case letters == 0:
		return false
	case digits < 2 && symbols > 0 && symbols == strings.Count(v, "/"):
		// Words joined by slashes: a path or a test's name (TestX/case).
		return false
	case digits > 0 && symbols > 0:
		// Every class: a chosen password (Harbor82#Harbor).
		return shannon(v) > 2.5
	case digits > 0 && upper > 0 && lowers > 0, digits >= 2, symbols > 0:
		return shannon(v) > 3
	}
	// Letters alone: a random string, not words or an identifier (randomly
	// drawn letters are about half capitals and change case within a word;
	// camelCase, UPPER_SNAKE and words do not).
	return len(v) >= 16 && upper*4 >= letters && upper*4 <= 3*letters && shannon(v) > 3.8 && !wordy(v)
}

// wordy reports whether every part of v between separators (. _ -) is in
// one case, or capitalised: NEXT_PUBLIC_API_KEY, process.env.Token.
func wordy(v string) bool {
	for _, part := range strings.FieldsFunc(v, func(r rune) bool { return r == '.' || r == '_' || r == '-' }) {
		rest := part[1:]
		if strings.ToLower(rest) != rest && strings.ToUpper(part) != part {
			return false
		}
	}
	return true
}

// reference reports whether v names a secret kept elsewhere rather than
// being one: $VAR, ${VAR}, $(cmd), %VAR%, <placeholder>, {{ template }},
// #{interpolation}, a path, a flag.
func reference(v string) bool {
	next := byte(0)
	if len(v) > 1 {
		next = v[1]
	}
	switch v[0] {
	case '$':
		return next == '{' || next == '(' || isVarName(v[1:])
	case '%':
		return v[len(v)-1] == '%'
	case '<':
		return v[len(v)-1] == '>'
	case '/':
		return strings.Count(v, "/") > 1 || strings.Contains(v, ".")
	case '{', '\\', ':':
		return true
	case '#':
		return next == '{' || next == ' '
	case '~', '.':
		return next == '/' || next == '.'
	case '-':
		return next == '-'
	}
	return false
}

func isVarName(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

// basicCredentials vets HTTP basic credentials: base64 of printable
// user:password.
func basicCredentials(v string) bool {
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return false
	}
	colon := false
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
		colon = colon || c == ':'
	}
	return colon && len(b) >= 3
}

// plausibleToken vets a bearer token: letters and digits, high entropy.
func plausibleToken(v string) bool {
	if strings.HasPrefix(v, markerPrefix) || !strings.ContainsAny(v, "0123456789") {
		return false
	}
	low := strings.ToLower(v)
	for _, p := range placeholders {
		if strings.Contains(low, p) {
			return false
		}
	}
	return shannon(v) > 3.5
}

// urlPassword finds the password of the URL whose "://" is at hit:
// scheme://user:PASSWORD@host. The user part may be empty
// (redis://:PASSWORD@host). A password that is a placeholder or a
// reference ($PW, ${PW}, {{pw}}, <password>) is left alone.
func urlPassword(s string, hit, n int) (start, end int, ok bool) {
	if hit == 0 || !isSchemeByte(s[hit-1]) {
		return 0, 0, false
	}
	i, colon := hit+n, -1
	for limit := min(len(s), i+512); i < limit; i++ {
		switch c := s[i]; c {
		case ':':
			if colon < 0 {
				colon = i
			}
			continue
		case '@':
		case '/', '?', '#', ' ', '\t', '\r', '\n', '"', '\'', '`', '<', '>', '\\':
			return 0, 0, false
		default:
			continue
		}
		break
	}
	if i >= len(s) || s[i] != '@' || colon < 0 || colon+1 == i || i+1 >= len(s) || !isHostByte(s[i+1]) {
		return 0, 0, false
	}
	pw := s[colon+1 : i]
	low := strings.ToLower(pw)
	switch {
	case strings.HasPrefix(pw, markerPrefix), pw[0] == '$', pw[0] == '<', pw[0] == '{', pw[0] == '%' && len(pw) > 1 && !isHex(pw[1]),
		strings.Trim(pw, "*x.") == "":
		return 0, 0, false
	}
	for _, p := range placeholders {
		if strings.Contains(low, p) {
			return 0, 0, false
		}
	}
	switch low {
	case "token", "key", "apikey", "api_key", "pat", "pw", "pass", "pwd":
		return 0, 0, false
	}
	return colon + 1, i, true
}

func isSchemeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '.' || c == '-'
}

func isHostByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '[' || c == '-' || c == '.' || c == '_' || c >= 0x80
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// Hindsight's allowlists, on top of gitleaks' own: what coding sessions are
// full of and gitleaks' rules, written for source trees, take for secrets
// (bench/results/redact lists what they removed on the clean corpora).
var (
	// A placeholder: YOUR_API_KEY, your-anon-key, <token>, TOKEN_HERE.
	placeholder = regexp.MustCompile(`(?i)^(?:your|my)[-_ ]?[a-z_-]*$|^<[^<>]*>$|_here$`)
	// A UUID names a request, a conversation or a row far more often than
	// it is a credential; kept for the rules that name the service.
	uuid = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	// A go.sum line: module version h1:hash=
	goSum = regexp.MustCompile(`\bh1:[A-Za-z0-9+/]{43}=$`)
	// Words and version numbers: second-brain-2.0, max-tokens.
	wordsVersion = regexp.MustCompile(`^[a-z]{3,}(?:[-_.](?:[a-z]{2,}|[0-9]{1,4}))+$`)
	// Test runners' output: --- PASS: TestX/case (0.00s).
	testOutput = regexp.MustCompile(`^\s*(?:---|===) (?:PASS|FAIL|SKIP|RUN|PAUSE|CONT)\b`)
	// A name ending in Id or _id names an identifier (apiCallId, key_id):
	// gitleaks' allowlists know a few such names; any is one.
	idName = regexp.MustCompile(`(?:[a-z0-9]I[dD]|[_.-][iI][dD]|\bid)["']?\s*(?:=|:|=>)`)
)

// hindsightAllowed applies Hindsight's allowlists to a finding of rule x.
func hindsightAllowed(x *rule, secret, match string, line func() string) bool {
	if placeholder.MatchString(secret) {
		return true
	}
	if !x.generic {
		return false
	}
	return uuid.MatchString(secret) || wordsVersion.MatchString(secret) ||
		goSum.MatchString(match) || testOutput.MatchString(line()) || idName.MatchString(nameOf(match))
}

// nameOf returns a generic match up to its first operator, the name
// assigned to.
func nameOf(match string) string {
	if i := strings.IndexAny(match, "=:"); i >= 0 {
		return match[:min(len(match), i+2)]
	}
	return ""
}
