package importer

// SourceCursor is the source the Cursor plugin's sessions are stored under
// (it reports "cursor", which the server stores as cursor-sync).
const SourceCursor = "cursor-sync"
