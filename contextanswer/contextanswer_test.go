package contextanswer

import (
	"strings"
	"testing"
)

func TestAssemble(t *testing.T) {
	ex := func(pos int, user, assistant string) Exchange {
		return Exchange{Position: pos, Turns: []Turn{{"user", user}, {"assistant", assistant}}}
	}
	sessions := []Session{
		{SessionID: "s1", Title: "First", Project: "web", Model: "m",
			Exchanges: []Exchange{ex(3, "later question", "later answer"), ex(1, "early question", "early answer")}},
		{SessionID: "s2", Title: "Second", Exchanges: []Exchange{ex(0, strings.Repeat("x", 100), "y")}},
	}
	text, msgs, n := Assemble("fix it", sessions, 1000)
	if n != 2 || !strings.HasPrefix(text, `Relevant coding sessions for: "fix it"`) {
		t.Fatalf("header or count: %d\n%s", n, text)
	}
	// Within a session, exchanges are shown in conversation order.
	if strings.Index(text, "early question") > strings.Index(text, "later question") {
		t.Errorf("exchanges not in conversation order:\n%s", text)
	}
	for _, want := range []string{"--- Session: First ---", "Project: web", "Model: m", "[USER]", "[ASSISTANT]", "--- Session: Second ---"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q", want)
		}
	}
	if len(msgs) != 6 || msgs[0].Metadata.SessionID != "s1" || msgs[0].Content != "early question" {
		t.Errorf("messages: %+v", msgs)
	}
	// A tight budget: every session still gets its best exchange (cut to
	// fit), before any session gets a second one.
	// s1's best exchange (26 characters) fits; s2's (101) is cut to the 14 left.
	_, msgs, n = Assemble("q", sessions, 40)
	if n != 2 || !strings.HasSuffix(msgs[len(msgs)-1].Content, "…") {
		t.Errorf("budget 40: %d sessions, last message %q", n, msgs[len(msgs)-1].Content)
	}
	total := 0
	for _, m := range msgs {
		total += len(strings.TrimSuffix(m.Content, "…"))
	}
	if total > 40 {
		t.Errorf("budget 40 exceeded: %d characters", total)
	}
	_, msgs, _ = Assemble("q", sessions, 130)
	seen := map[string]int{}
	for _, m := range msgs {
		seen[m.Metadata.SessionID]++
	}
	if seen["s1"] != 2 || seen["s2"] != 2 {
		t.Errorf("budget 130 should give each session its best exchange first: %v", seen)
	}
}
