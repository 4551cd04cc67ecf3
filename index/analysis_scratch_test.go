package index

import (
	"fmt"
	"testing"
)

func TestScratchAnalyze(t *testing.T) {
	a, err := newAnalyzer()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"parseConfigFile", "parse_config_file", "parse-config-file", "config.parse.file", "src/parse/config_file.go", "parse config file", "HTTPServer base64Encode __init__ IOError v1.2.3 3.14", "the state-of-the-art T-cell IL-6 don't John's", "title:foo *:* std::vector https://github.com/foo/bar", "日本語のテキスト café naïve 😀 emoji", "parseConfigFile foo"} {
		var out []string
		for _, tk := range a.Analyze([]byte(s)) {
			out = append(out, fmt.Sprintf("%s@%d[%d:%d]", tk.Term, tk.Position, tk.Start, tk.End))
		}
		t.Logf("%q -> %v", s, out)
	}
}
