// Starts `apdsl lsp` (the language server of the apdsl Python package) for .apk files and,
// unless apdsl.pythonFiles is false, Python files: diagnostics as you type, hovers,
// go-to-definition and completion.  Highlighting of .apk comes from syntaxes/ alone.
const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function settings() {
  const c = vscode.workspace.getConfiguration("apdsl");
  return {
    maxSteps: c.get("maxSteps"),
    maxMemory: c.get("maxMemory"),
    maxTime: c.get("maxTime"),
    timeLimit: c.get("timeLimit"),
  };
}

function activate(context) {
  const config = vscode.workspace.getConfiguration("apdsl");
  const [command, ...args] = config.get("command") || ["apdsl", "lsp"];
  const documents = [{ scheme: "file", language: "apk" }];
  if (config.get("pythonFiles")) {
    documents.push({ scheme: "file", language: "python" });
  }
  client = new LanguageClient(
    "apdsl",
    "apdsl",
    { command, args, transport: TransportKind.stdio },
    {
      documentSelector: documents,
      initializationOptions: settings(),
      synchronize: { configurationSection: "apdsl" },
    }
  );
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
