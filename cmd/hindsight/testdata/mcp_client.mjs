// The MCP end-to-end client (cmd/hindsight/mcp_e2e_test.go): the official
// TypeScript SDK's Client connects to Hindsight over Streamable HTTP (/mcp)
// and over stdio (`hindsight mcp`), as two users, lists the tools and calls
// each, and tries every session id of one user with the other's key. It
// prints one JSON report on stdout; the Go test makes the assertions.
//
// Input (environment): HINDSIGHT_URL, ALICE_KEY, BOB_KEY, and
// HINDSIGHT_MCP_COMMAND, a JSON array: the command that runs `hindsight mcp`.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const url = process.env.HINDSIGHT_URL;
const keys = { alice: process.env.ALICE_KEY, bob: process.env.BOB_KEY };
const [command, ...args] = JSON.parse(process.env.HINDSIGHT_MCP_COMMAND);

function transport(kind, key) {
  if (kind === "http") {
    return new StreamableHTTPClientTransport(new URL(url + "/mcp"), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    });
  }
  return new StdioClientTransport({
    command,
    args,
    // Only what `hindsight mcp` needs: its variables and the test switch.
    env: {
      PATH: process.env.PATH,
      HINDSIGHT_TEST_RUN_MAIN: "1",
      HINDSIGHT_URL: url,
      HINDSIGHT_API_KEY: key,
    },
    stderr: "pipe",
  });
}

async function connect(kind, user) {
  const client = new Client({ name: "hindsight-e2e", version: "0.0.0" });
  const t = transport(kind, keys[user]);
  let stderr = "";
  await client.connect(t);
  if (t.stderr) t.stderr.on("data", (d) => (stderr += d));
  return { client, stderr: () => stderr };
}

function text(result) {
  return (result.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
}

function summary(result) {
  return { isError: !!result.isError, text: text(result), structured: result.structuredContent ?? null };
}

const report = {};
for (const kind of ["http", "stdio"]) {
  report[kind] = {};
  const conns = {};
  for (const user of ["alice", "bob"]) {
    const conn = await connect(kind, user);
    conns[user] = conn;
    const c = conn.client;
    const r = {};
    r.server = c.getServerVersion();
    r.tools = (await c.listTools()).tools.map((t) => ({
      name: t.name,
      required: t.inputSchema.required ?? [],
      hasOutputSchema: !!t.outputSchema,
    }));
    r.search = summary(await c.callTool({ name: "search_sessions", arguments: { query: "login redirect callback" } }));
    r.searchFiltered = summary(await c.callTool({ name: "search_sessions", arguments: { query: "login redirect callback", source: "opencode", limit: 5 } }));
    r.context = summary(await c.callTool({ name: "get_context", arguments: { query: "how did we fix the login redirect", maxChars: 4000 } }));
    r.list = summary(await c.callTool({ name: "list_sessions", arguments: {} }));
    const ids = (r.list.structured?.sessions ?? []).map((s) => s.id);
    r.sessions = {};
    for (const id of ids) {
      r.sessions[id] = summary(await c.callTool({ name: "get_session", arguments: { id, maxChars: 2000 } }));
    }
    r.ids = ids;
    report[kind][user] = r;
  }
  // Each user's ids, tried with the other user's key.
  for (const [user, other] of [["alice", "bob"], ["bob", "alice"]]) {
    report[kind][user].foreign = {};
    for (const id of report[kind][other].ids) {
      report[kind][user].foreign[id] = summary(await conns[user].client.callTool({ name: "get_session", arguments: { id } }));
    }
  }
  for (const user of ["alice", "bob"]) {
    await conns[user].client.close();
    report[kind][user].stderr = conns[user].stderr();
  }
}
process.stdout.write(JSON.stringify(report));
