package importer

// SourceVSCodeCopilot is the source of GitHub Copilot Chat sessions from VS
// Code.
const SourceVSCodeCopilot = "vscode-copilot"
