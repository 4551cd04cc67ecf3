package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// SourceVSCodeCopilot is the source of GitHub Copilot Chat sessions from VS
// Code.
const SourceVSCodeCopilot = "vscode-copilot"

// VSCodeCopilot lists the GitHub Copilot Chat sessions VS Code keeps in its
// user data directory: one file per session in
// User/workspaceStorage/<workspace>/chatSessions/ (the workspace's folder is
// in workspace.json beside it) and, for windows without a folder, in
// User/globalStorage/emptyWindowChatSessions/. root is the user data
// directory or its User directory, workspaceStorage, one workspace's
// directory, a chatSessions directory, or one session file.
//
// A session file is one JSON document {sessionId, creationDate,
// lastMessageDate (ms), customTitle, requests} or, in newer versions, JSONL:
// line 1 {"kind":0,"v":<the document>}, then patches {"kind":1,"k":[path],"v"}
// replacing the value at path and {"kind":2,"k":[path],"v"} appending to the
// array at path. Each request is one turn: message.text the prompt, response
// the answer's items (Markdown fragments {value}, tool invocations
// "toolInvocationSerialized" written again as they progress, file edits,
// references), result.metadata its token counts and model, modelId the model
// picked.
func VSCodeCopilot(root string, opts ReadOptions) ([]Item, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("vs code copilot history: %w", err)
	}
	if !fi.IsDir() {
		return []Item{vscItem(root, opts)}, nil
	}
	if isDir(filepath.Join(root, "User")) {
		root = filepath.Join(root, "User")
	}
	var dirs []string // chatSessions directories
	switch {
	case filepath.Base(root) == "chatSessions" || filepath.Base(root) == "emptyWindowChatSessions":
		dirs = []string{root}
	case isDir(filepath.Join(root, "chatSessions")):
		dirs = []string{filepath.Join(root, "chatSessions")}
	default:
		ws := filepath.Join(root, "workspaceStorage")
		if filepath.Base(root) == "workspaceStorage" {
			ws = root
		}
		es, _ := os.ReadDir(ws)
		for _, e := range es {
			if d := filepath.Join(ws, e.Name(), "chatSessions"); e.IsDir() && isDir(d) {
				dirs = append(dirs, d)
			}
		}
		if d := filepath.Join(root, "globalStorage", "emptyWindowChatSessions"); isDir(d) {
			dirs = append(dirs, d)
		}
	}
	var items []Item
	for _, d := range dirs {
		es, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		// A session saved in both forms is read from its JSONL.
		byID := map[string]string{}
		for _, e := range es {
			name := e.Name()
			ext := filepath.Ext(name)
			if !e.Type().IsRegular() || (ext != ".json" && ext != ".jsonl") {
				continue
			}
			id := strings.TrimSuffix(name, ext)
			if prev, ok := byID[id]; !ok || strings.HasSuffix(prev, ".json") {
				byID[id] = filepath.Join(d, name)
			}
		}
		for _, p := range byID {
			items = append(items, vscItem(p, opts))
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Path < items[j].Path })
	return items, nil
}

func vscItem(path string, opts ReadOptions) Item {
	return Item{Path: path, read: func() (Session, []Problem, error) { return readVSCodeCopilot(path, opts.maxPart()) }}
}

type vscSession struct {
	SessionID       string       `json:"sessionId"`
	CreationDate    float64      `json:"creationDate"`
	LastMessageDate float64      `json:"lastMessageDate"`
	CustomTitle     string       `json:"customTitle"`
	Requests        []vscRequest `json:"requests"`
}

type vscRequest struct {
	RequestID string  `json:"requestId"`
	Timestamp float64 `json:"timestamp"`
	ModelID   string  `json:"modelId"`
	Message   struct {
		Text string `json:"text"`
	} `json:"message"`
	Response []json.RawMessage `json:"response"`
	Result   *struct {
		Timings *struct {
			TotalElapsed float64 `json:"totalElapsed"`
		} `json:"timings"`
		Metadata *struct {
			PromptTokens  float64 `json:"promptTokens"`
			OutputTokens  float64 `json:"outputTokens"`
			ResolvedModel string  `json:"resolvedModel"`
		} `json:"metadata"`
	} `json:"result"`
}

// vscResponseItem is one element of a response, with the fields of the
// kinds the import reads.
type vscResponseItem struct {
	Kind              string          `json:"kind"`
	Value             json.RawMessage `json:"value"`
	Content           json.RawMessage `json:"content"`
	ToolID            string          `json:"toolId"`
	ToolCallID        string          `json:"toolCallId"`
	InvocationMessage json.RawMessage `json:"invocationMessage"`
	PastTenseMessage  json.RawMessage `json:"pastTenseMessage"`
	ResultDetails     json.RawMessage `json:"resultDetails"`
	ToolSpecificData  *struct {
		Command string `json:"command"`
	} `json:"toolSpecificData"`
	InlineReference json.RawMessage `json:"inlineReference"`
	Name            string          `json:"name"`
}

func readVSCodeCopilot(path string, maxPart int) (Session, []Problem, error) {
	var doc []byte
	var probs []Problem
	var err error
	if strings.HasSuffix(path, ".jsonl") {
		doc, probs, err = vscReplay(path)
	} else {
		doc, err = os.ReadFile(path)
	}
	if err != nil {
		return Session{}, probs, err
	}
	var vs vscSession
	if err := json.Unmarshal(doc, &vs); err != nil {
		return Session{}, probs, fmt.Errorf("%s: not a chat session: %s", path, jsonError(err))
	}
	id := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".jsonl"), ".json")
	s := Session{ExternalID: cmpOr(vs.SessionID, id), Source: SourceVSCodeCopilot, Title: vs.CustomTitle, CreatedAt: ms(vs.CreationDate)}
	if filepath.Base(filepath.Dir(path)) == "chatSessions" {
		s.ProjectPath = cursorWorkspaceFolder(filepath.Dir(filepath.Dir(path)))
		s.ProjectName = projectName(s.ProjectPath)
	}
	for i, req := range vs.Requests {
		at := ms(req.Timestamp)
		if at.IsZero() {
			at = s.CreatedAt
		}
		rid := cmpOr(req.RequestID, fmt.Sprintf("%s-%d", s.ExternalID, i+1))
		if text := strings.TrimSpace(req.Message.Text); text != "" {
			s.Messages = append(s.Messages, Message{ExternalID: rid + "-prompt", Role: "user", CreatedAt: at,
				Parts: []Part{{Type: PartText, Content: truncate(text, maxPart)}}})
		}
		ans := Message{ExternalID: rid + "-response", Role: "assistant", CreatedAt: at, Model: req.ModelID,
			Parts: vscParts(req.Response, maxPart)}
		if r := req.Result; r != nil {
			if r.Metadata != nil {
				ans.Model = cmpOr(r.Metadata.ResolvedModel, req.ModelID)
				if r.Metadata.PromptTokens > 0 || r.Metadata.OutputTokens > 0 {
					ans.PromptTokens, ans.CompletionTokens = ptr(round(r.Metadata.PromptTokens)), ptr(round(r.Metadata.OutputTokens))
					s.PromptTokens += *ans.PromptTokens
					s.CompletionTokens += *ans.CompletionTokens
				}
			}
			if r.Timings != nil && r.Timings.TotalElapsed > 0 {
				ans.DurationMs = ptr(round(r.Timings.TotalElapsed))
			}
		}
		if s.Model == "" {
			s.Model = ans.Model
		}
		if len(ans.Parts) > 0 {
			s.Messages = append(s.Messages, ans)
		}
	}
	if s.Title == "" {
		for _, m := range s.Messages {
			if m.Role == "user" {
				s.Title = Title(m.Text())
				break
			}
		}
	}
	if end := ms(vs.LastMessageDate); !s.CreatedAt.IsZero() && end.After(s.CreatedAt) {
		s.DurationMs = end.Sub(s.CreatedAt).Milliseconds()
	}
	return s, probs, nil
}

// vscParts turns a response's items into parts: Markdown fragments joined
// into text, each tool invocation (once, where it first ran, with its last
// state) a call and its output.
func vscParts(items []json.RawMessage, maxPart int) []Part {
	var parts []Part
	var text strings.Builder
	flush := func() {
		if s := strings.TrimSpace(text.String()); s != "" {
			parts = append(parts, Part{Type: PartText, Content: truncate(s, maxPart)})
		}
		text.Reset()
	}
	tools := map[string]int{} // toolCallId -> index of its call in parts
	for _, raw := range items {
		var it vscResponseItem
		if json.Unmarshal(raw, &it) != nil {
			continue
		}
		switch it.Kind {
		case "", "markdownContent", "markdownVuln":
			text.WriteString(vscString(it.Value) + vscString(it.Content))
		case "inlineReference":
			text.WriteString("`" + cmpOr(it.Name, vscRefName(it.InlineReference)) + "`")
		case "toolInvocationSerialized":
			call, result := vscTool(it, maxPart)
			if i, ok := tools[it.ToolCallID]; ok && it.ToolCallID != "" {
				parts[i] = call
				if result.Content != "" {
					if i+1 < len(parts) && parts[i+1].Type == PartToolResult {
						parts[i+1] = result
					} else {
						parts = append(parts[:i+1:i+1], append([]Part{result}, parts[i+1:]...)...)
					}
				}
				continue
			}
			flush()
			tools[it.ToolCallID] = len(parts)
			parts = append(parts, call)
			if result.Content != "" {
				parts = append(parts, result)
			}
		}
	}
	flush()
	return parts
}

// vscString reads a value that is a string or {"value": string}.
func vscString(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var v struct {
		Value string `json:"value"`
	}
	json.Unmarshal(raw, &v)
	return v.Value
}

// vscRefName names a file or symbol reference by its last path element.
func vscRefName(raw json.RawMessage) string {
	var ref struct {
		Name   string `json:"name"`
		FsPath string `json:"fsPath"`
		Path   string `json:"path"`
		URI    *struct {
			FsPath string `json:"fsPath"`
			Path   string `json:"path"`
		} `json:"uri"`
	}
	json.Unmarshal(raw, &ref)
	p := cmpOr(ref.Name, ref.FsPath, ref.Path)
	if p == "" && ref.URI != nil {
		p = cmpOr(ref.URI.FsPath, ref.URI.Path)
	}
	return pathBaseAny(p)
}

func pathBaseAny(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// vscTool makes a tool invocation a call (arguments from resultDetails.input,
// the terminal command, or the invocation message) and its output.
func vscTool(it vscResponseItem, maxPart int) (Part, Part) {
	var details struct {
		Input  string `json:"input"`
		Output []struct {
			Value string `json:"value"`
		} `json:"output"`
	}
	json.Unmarshal(it.ResultDetails, &details)
	var args json.RawMessage
	switch {
	case json.Valid([]byte(details.Input)) && strings.TrimSpace(details.Input) != "":
		args = json.RawMessage(details.Input)
	case it.ToolSpecificData != nil && it.ToolSpecificData.Command != "":
		args, _ = json.Marshal(map[string]string{"command": it.ToolSpecificData.Command})
	default:
		args, _ = json.Marshal(map[string]string{"summary": vscString(it.InvocationMessage)})
	}
	name := cmpOr(it.ToolID, "tool")
	var out []string
	for _, o := range details.Output {
		if o.Value != "" {
			out = append(out, o.Value)
		}
	}
	content := strings.Join(out, "\n")
	if content == "" {
		content = vscString(it.PastTenseMessage)
	}
	return Part{Type: PartToolCall, ToolName: name, Args: jsonArgs(args, maxPart)},
		Part{Type: PartToolResult, ToolName: name, Content: truncate(content, maxPart)}
}

// vscReplay rebuilds a JSONL session's document: the snapshot of line 1
// with every later patch applied in order. A line that is not a patch, or
// whose path does not lead into the document, is reported and skipped.
func vscReplay(path string) ([]byte, []Problem, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var doc any
	var probs []Problem
	br := bufio.NewReaderSize(f, 1<<20)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var p struct {
				Kind *int  `json:"kind"`
				K    []any `json:"k"`
				V    any   `json:"v"`
			}
			switch jerr := json.Unmarshal(line, &p); {
			case jerr != nil:
				probs = append(probs, Problem{Path: path, Line: n, Err: "skipped: not a patch: " + jsonError(jerr)})
			case p.Kind == nil:
				probs = append(probs, Problem{Path: path, Line: n, Err: "skipped: a patch without a kind"})
			case *p.Kind == 0:
				doc = p.V
			case doc == nil:
				probs = append(probs, Problem{Path: path, Line: n, Err: "skipped: a patch before the snapshot"})
			default:
				var perr error
				doc, perr = vscPatch(doc, p.K, *p.Kind, p.V)
				if perr != nil {
					probs = append(probs, Problem{Path: path, Line: n, Err: "skipped patch: " + perr.Error()})
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, probs, err
		}
	}
	if doc == nil {
		return nil, probs, fmt.Errorf("%s: no snapshot line (kind 0)", path)
	}
	b, err := json.Marshal(doc)
	return b, probs, err
}

// vscPatch applies one patch to node and returns it: kind 1 sets the value
// at path k, kind 2 appends v's elements (or v) to the array there.
func vscPatch(node any, k []any, kind int, v any) (any, error) {
	if len(k) == 0 {
		switch kind {
		case 1:
			return v, nil
		case 2:
			arr, ok := node.([]any)
			if !ok && node != nil {
				return node, errors.New("appending to what is not an array")
			}
			if more, ok := v.([]any); ok {
				return append(arr, more...), nil
			}
			return append(arr, v), nil
		}
		return node, fmt.Errorf("unknown kind %d", kind)
	}
	switch n := node.(type) {
	case map[string]any:
		key, ok := k[0].(string)
		if !ok {
			return node, fmt.Errorf("path element %v indexes an object", k[0])
		}
		child, err := vscPatch(n[key], k[1:], kind, v)
		if err != nil {
			return node, err
		}
		n[key] = child
		return n, nil
	case []any:
		f, ok := k[0].(float64)
		i := int(f)
		if !ok || float64(i) != f || i < 0 || i >= len(n) {
			return node, fmt.Errorf("path element %v is not an index of an array of %d", k[0], len(n))
		}
		child, err := vscPatch(n[i], k[1:], kind, v)
		if err != nil {
			return node, err
		}
		n[i] = child
		return n, nil
	case nil:
		if key, ok := k[0].(string); ok {
			child, err := vscPatch(nil, k[1:], kind, v)
			return map[string]any{key: child}, err
		}
	}
	return node, fmt.Errorf("path element %v leads into a %T", k[0], node)
}

// vsCodeCopilotRoots: VS Code's User directory: ~/.config/Code/User on
// Linux ($XDG_CONFIG_HOME/Code when set), ~/Library/Application
// Support/Code/User on macOS, %APPDATA%\Code\User on Windows. Insiders and
// VSCodium keep theirs beside it (Code - Insiders, VSCodium): name it as
// PATH.
func vsCodeCopilotRoots(home, goos string, getenv func(string) string) []string {
	return electronUserDirs("Code", home, goos, getenv)
}
