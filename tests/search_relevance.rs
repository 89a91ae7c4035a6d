//! Issue 63 item 7: `search_tools` answers with the best match's server first. "read file"
//! against the reference `filesystem` and `everything` servers used to print `everything`'s
//! declarations first (servers in alphabetical order), so `everything:gzip-file-as-resource`
//! led the answer although `filesystem:read_text_file` matched best. And the tool descriptions
//! give sizes as people write them ("1 MiB"), not "1048576 bytes" (tests/serve_state.rs).

use crate::common::*;
use serde_json::json;

#[tokio::test]
async fn search_tools_puts_the_best_matchs_server_first() {
    let modules = repo_root().join("node_modules/@modelcontextprotocol");
    let data = tempfile::tempdir().unwrap();
    let served = crate::serve_support::start_with_servers(
        json!({
            "everything": {"command": "node", "args": [modules.join("server-everything/dist/index.js")]},
            "filesystem": {"command": "node", "args": [modules.join("server-filesystem/dist/index.js"), data.path()], "files": {"write": [data.path()]}}
        }),
        json!({}),
        &[],
    )
    .await;
    for language in ["typescript", "python"] {
        let r = served
            .call(
                "search_tools",
                json!({"query": "read file", "language": language}),
            )
            .await
            .unwrap();
        let found = &crate::serve_support::structured(&r)["tools"];
        let first = found[0].as_str().unwrap();
        assert!(first.starts_with("filesystem:read_"), "{found}");
        let text = crate::serve_support::text(&r);
        let (fs, ev) = match language {
            "typescript" => ("\n  filesystem: {", "\n  everything: {"),
            _ => ("\nclass filesystem:", "\nclass everything:"),
        };
        let fs_at = text.find(fs).unwrap_or_else(|| panic!("{text}"));
        let ev_at = text.find(ev).unwrap_or_else(|| panic!("{text}"));
        assert!(
            fs_at < ev_at,
            "{language}: everything before filesystem:\n{text}"
        );
    }
}
