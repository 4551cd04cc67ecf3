package importer

import (
	"sync"

	"github.com/hindsight-dev/hindsight/redact"
)

// Redaction returns a hook for Options.Redact that redacts a session's
// texts with r (its title, project path and name, and every part: text,
// tool arguments, tool output), so secrets never leave the machine, and a
// function that returns what the hook has removed so far, by rule. The
// server redacts again with its own rules; text redacted here is left as
// it is there.
func Redaction(r *redact.Redactor) (hook func(*Session), found func() redact.Counts) {
	var mu sync.Mutex
	var total redact.Counts
	hook = func(s *Session) {
		var c redact.Counts
		str := func(p *string) {
			out, n := r.String(*p)
			if n != nil {
				*p = out
				c.Add(n)
			}
		}
		str(&s.Title)
		str(&s.ProjectPath)
		str(&s.ProjectName)
		for i := range s.Messages {
			for j := range s.Messages[i].Parts {
				p := &s.Messages[i].Parts[j]
				str(&p.Content)
				str(&p.Text)
				if len(p.Args) > 0 {
					out, n := r.JSON(p.Args)
					if n != nil {
						p.Args = out
						c.Add(n)
					}
				}
			}
		}
		mu.Lock()
		total.Add(c)
		mu.Unlock()
	}
	found = func() redact.Counts {
		mu.Lock()
		defer mu.Unlock()
		out := redact.Counts{}
		out.Add(total)
		return out
	}
	return hook, found
}
