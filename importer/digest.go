package importer

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/cespare/xxhash/v2"
)

// A digest names the content of a message or of a session's own fields, so
// a follower can tell what changed since the server acknowledged it without
// keeping the content: a tool result added to its call, a message Gemini
// rewrote as it streamed, token counts that grew. Digests are stable across
// runs (the state file keeps the digests of whole-file sessions).

type digester struct{ h *xxhash.Digest }

func newDigester() digester { return digester{xxhash.New()} }

func (d digester) str(s string) {
	var n [binary.MaxVarintLen64]byte
	d.h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
	d.h.WriteString(s)
}

func (d digester) num(v int64) { d.str(strconv.FormatInt(v, 10)) }

func (d digester) opt(v *int64) {
	if v == nil {
		d.str("-")
		return
	}
	d.num(*v)
}

func (d digester) sum() uint64 { return d.h.Sum64() }

// messageDigest names everything of m the sync API stores.
func messageDigest(m *Message) uint64 {
	d := newDigester()
	d.str(m.ExternalID)
	d.str(m.Role)
	d.str(m.Model)
	d.opt(m.PromptTokens)
	d.opt(m.CompletionTokens)
	d.opt(m.DurationMs)
	d.num(m.CreatedAt.UnixMilli())
	d.num(int64(len(m.Parts)))
	for _, p := range m.Parts {
		d.str(p.Type)
		d.str(p.Content)
		d.str(p.Text)
		d.str(p.ToolName)
		d.str(string(p.Args))
	}
	if a := m.SubAgent; a != nil {
		d.str(a.ID)
		d.str(a.Type)
		d.str(a.Description)
	}
	return d.sum()
}

// sessionDigest names the session's own fields (not its messages).
func sessionDigest(s *Session) uint64 {
	d := newDigester()
	for _, v := range []string{s.ExternalID, s.Source, s.Title, s.ProjectPath, s.ProjectName, s.GitBranch, s.Model, s.Provider} {
		d.str(v)
	}
	d.num(s.PromptTokens)
	d.num(s.CompletionTokens)
	d.num(int64(math.Float64bits(s.Cost)))
	d.num(s.DurationMs)
	d.num(s.CreatedAt.UnixMilli())
	return d.sum()
}

// wholeDigest names a session and all its messages.
func wholeDigest(s *Session) string {
	d := newDigester()
	d.num(int64(sessionDigest(s)))
	for i := range s.Messages {
		d.num(int64(messageDigest(&s.Messages[i])))
	}
	return strconv.FormatUint(d.sum(), 16)
}

// cloneSession copies s deeply enough that redacting the copy (which
// rewrites parts in place) leaves s as it was: a followed session's reader
// goes on from s.
func cloneSession(s Session, msgs []Message) Session {
	out := s
	out.Messages = make([]Message, len(msgs))
	for i, m := range msgs {
		m.Parts = append([]Part(nil), m.Parts...)
		out.Messages[i] = m
	}
	return out
}
