package index

import (
	"github.com/blevesearch/bleve/v2/mapping"
)

// Bleve's plain API, for the load bench (bench/runner), which times what
// Bleve alone costs for the documents of a rebuild: each document a Go
// value that Bleve maps and analyses itself (with this package's
// analyzer), written with bleve.Index.Batch into an index made with
// PlainMapping. Such an index is not for searching: it has no number
// fields, no pairs and no metadata, and its terms are the analyzer's,
// not the owners' (textTerm).

// PlainMapping returns the mapping an Index is made with for opts.
func PlainMapping(opts Options) mapping.IndexMapping {
	return newMapping(plainStored(opts))
}

// PlainDoc returns session s as Bleve's plain API takes it: its document
// id and fields (the owner, the scored text as Index writes it for opts,
// and the title and body when opts has no Text, as Index stores them).
func PlainDoc(opts Options, s Session) (id string, fields map[string]any, err error) {
	repeat, err := opts.titleRepeat()
	if err != nil {
		return "", nil, err
	}
	fields = map[string]any{fieldUser: s.UserID, fieldText: sessionText(s, repeat)}
	if plainStored(opts) != nil {
		fields[fieldTitle], fields[fieldBody] = s.Title, s.Body
	}
	return docKey(s.UserID, s.SessionID), fields, nil
}

// plainStored is the stored fields of an Index for opts.
func plainStored(opts Options) []string {
	if opts.Text == nil {
		return []string{fieldTitle, fieldBody}
	}
	return nil
}
