package importer

// SourcePi is the source pi-opensync-plugin reports.
const SourcePi = "pi"
