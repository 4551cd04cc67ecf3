package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// offSite are "next" values a browser would follow to another origin, or to
// a script, or that the dashboard should not trust: each must fall back.
// They come from the ways browsers normalise a Location (tabs and newlines
// removed anywhere, leading C0 and spaces trimmed, backslashes read as
// slashes, schemes matched without case) and from one percent-decoding.
var offSite = []string{
	"", "sessions", "./sessions", "../x",
	"//evil.example", "///evil.example", "////evil.example",
	`/\evil.example`, `\\evil.example`, `\/evil.example`, `/\/evil.example`,
	"/\t/evil.example/x", "/\n/evil.example", "/\r/evil.example", "/\r\n/evil.example",
	"\t//evil.example", "/\t\\evil.example", "/\t\t/evil.example", "\n/\n/evil.example",
	" //evil.example", "\x00//evil.example", "/\x00/evil.example", "\x1f//evil.example", "/\x0b/evil.example",
	"/%2F/evil.example", "/%2f/evil.example", "/%2F%2Fevil.example", "/%5C/evil.example", "/%5cevil.example",
	"/%09/evil.example", "/%0a/evil.example", "/%0D%0A/evil.example", "/%00/evil.example",
	"https://evil.example/", "http:evil.example", "https:/evil.example", "HTTPS://evil.example",
	"http://127.0.0.1/sessions", "ftp://evil.example", "//127.0.0.1/sessions",
	"javascript:alert(1)", "JaVaScRiPt:alert(1)", "java\tscript:alert(1)", " javascript:alert(1)",
	"data:text/html,<script>alert(1)</script>", "vbscript:x", "mailto:a@evil.example",
	"/..//evil.example", "/./evil", "/sessions/../..//evil.example", "/%2e%2e//evil.example",
	"/login", "/logout", "/setup", "/login?next=/x", "/./login", "/sessions/../login", "/%6Cogin", "/LOGIN/../login",
	"/a\r\nSet-Cookie: x", "/\u00a0//evil.example", "/\uff0f\uff0fevil.example", "/\u2028/evil.example",
	"/sessions\x7f",
}

func TestLocalPath(t *testing.T) {
	for _, in := range offSite {
		if got := localPath(in, "/d"); got != "/d" {
			t.Errorf("localPath(%q) = %q, want the fallback", in, got)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"/", "/"},
		{"/sessions", "/sessions"},
		{"/sessions/abc?x=1", "/sessions/abc?x=1"},
		{"/sessions?q=a+b&page=2", "/sessions?q=a+b&page=2"},
		{"/sessions?q=%E6%97%A5", "/sessions?q=%E6%97%A5"},
		{"/sessions/a%20b", "/sessions/a%20b"},
		{"/sessions/abc#m3", "/sessions/abc#m3"},
		{"/sessions?next=//evil.example", "/sessions?next=//evil.example"},
		{"/@evil.example", "/@evil.example"},
		{"/evals", "/evals"},
		{"/sess\tions", "/sessions"}, // as a browser reads it
	} {
		if got := localPath(tc.in, "/d"); got != tc.want {
			t.Errorf("localPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// sameSitePath reports whether a Location header keeps a browser on the
// page's origin, judged strictly and without the code under test: printable
// ASCII only, no backslash, a single leading slash, and resolving it against
// the page's URL keeps scheme and host.
func sameSitePath(loc string) bool {
	for i := 0; i < len(loc); i++ {
		if c := loc[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return false
		}
	}
	if !strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") {
		return false
	}
	p := strings.ToLower(loc)
	if strings.HasPrefix(p, "/%2f") || strings.HasPrefix(p, "/%5c") {
		return false
	}
	base, _ := url.Parse("http://dash.test/login")
	ref, err := url.Parse(loc)
	if err != nil {
		return false
	}
	u := base.ResolveReference(ref)
	return u.Scheme == "http" && u.Host == "dash.test"
}

// TestSignInNeverRedirectsOffSite sends every hostile "next" through the
// real sign-in form and the signed-in GET /login, and checks where the
// browser is sent.
func TestSignInNeverRedirectsOffSite(t *testing.T) {
	f := newFixture(t, Config{LoginFailures: 1000})
	f.user("alice")
	b := f.browser()
	b.signIn("alice")
	signedOut := f.browser()
	signedOut.get("/login")
	for _, next := range offSite {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/login?next="+url.QueryEscape(next), nil)
		if st, loc := b.location(req); st != http.StatusSeeOther || loc != "/sessions" || !sameSitePath(loc) {
			t.Errorf("signed in, next=%q: %d Location %q, want /sessions", next, st, loc)
		}
		form := url.Values{"name": {"alice"}, "password": {"alice-password"}, "next": {next}, "csrf": {signedOut.csrf}}
		req, _ = http.NewRequest(http.MethodPost, f.srv.URL+"/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if st, loc := signedOut.location(req); st != http.StatusSeeOther || loc != "/sessions" || !sameSitePath(loc) {
			t.Errorf("sign-in, next=%q: %d Location %q, want /sessions", next, st, loc)
		}
	}
	// The report's case, verbatim.
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/login?next=/%09/other-host/x", nil)
	if _, loc := b.location(req); !sameSitePath(loc) {
		t.Errorf("/login?next=/%%09/other-host/x: Location %q leaves the site", loc)
	}
	// A page of the site survives the round trip.
	req, _ = http.NewRequest(http.MethodGet, f.srv.URL+"/login?next="+url.QueryEscape("/sessions?q=a+b"), nil)
	if _, loc := b.location(req); loc != "/sessions?q=a+b" {
		t.Errorf("next=/sessions?q=a+b: Location %q", loc)
	}
}

// location sends req with the browser's cookies and returns the status and
// the raw Location header (http.Client would refuse to parse a hostile one).
func (b *browser) location(req *http.Request) (int, string) {
	b.t.Helper()
	for _, c := range b.c.Jar.Cookies(req.URL) {
		req.AddCookie(c)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		b.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}
