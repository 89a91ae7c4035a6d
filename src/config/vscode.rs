//! VS Code's `.vscode/mcp.json` shape, read as it is written, and the variables every entry may
//! use. VS Code names the servers' section `servers` (read like `mcpServers`; both in one file
//! is refused), may give an entry an `envFile` (a dotenv file read into its `env`, which wins),
//! and writes variables in its own syntax. In `command`, `args`, `cwd`, `env`, `envFile`, `url`
//! and `headers`:
//!
//! - `${workspaceFolder}`: the folder holding `.vscode/` when the config is `.vscode/mcp.json`,
//!   else the config file's directory; `${workspaceFolderBasename}` its last component;
//!   `${userHome}` the host's `HOME`; `${pathSeparator}` and `${/}` are `/`.
//! - `${env:NAME}` is `${NAME}`: the host's variable (a config error when it is not set, naming
//!   it, never its value); `${NAME:-default}` uses `default` when it is not set.
//! - `${input:ID}` (VS Code prompts the person for it, declared in `inputs`) is refused: there is
//!   no editor to ask; the message says to put the value in a host variable and write
//!   `${env:NAME}`. `${command:…}` and `${config:…}` (VS Code commands and settings) are refused
//!   the same way.
//!
//! `command`, `args`, `cwd`, `envFile` and `url` are expanded when the config is read, so no
//! `${HOME}` reaches a server as text; `env` and `headers` are expanded when the server starts
//! (`server_entry`, `catalog::server_env`).

use super::server_entry::{expand, host_var};
use super::ServerConfig;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Code of a VS Code variable or key this host cannot honour.
pub const CONFIG_VSCODE_UNSUPPORTED: &str = "CONFIG_VSCODE_UNSUPPORTED";

/// Largest `envFile` read.
pub const MAX_ENV_FILE_BYTES: u64 = 256 * 1024;

/// The servers of the file: `mcpServers` or VS Code's `servers`, not both.
pub fn servers(
    mcp_servers: Option<BTreeMap<String, ServerConfig>>,
    servers: Option<BTreeMap<String, ServerConfig>>,
) -> Result<BTreeMap<String, ServerConfig>, String> {
    match (mcp_servers, servers) {
        (Some(_), Some(_)) => Err(
            "the config has both \"mcpServers\" and \"servers\" (VS Code's name for the same section): keep one".into(),
        ),
        (a, b) => Ok(a.or(b).unwrap_or_default()),
    }
}

/// `${workspaceFolder}` for a config file in `base_dir`.
pub fn workspace_folder(base_dir: &Path) -> PathBuf {
    match (base_dir.file_name(), base_dir.parent()) {
        (Some(name), Some(parent)) if name == ".vscode" => parent.to_path_buf(),
        _ => base_dir.to_path_buf(),
    }
}

/// `text` with VS Code's variables in this host's form (`${env:X}` → `${X}`, the workspace's
/// folder written out), or the refusal of one it cannot honour.
fn translate(text: &str, place: &str, workspace: &Path) -> Result<String, String> {
    if !text.contains("${") {
        return Ok(text.to_string());
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inner = &after[..end];
        let folder = workspace.to_string_lossy();
        match inner {
            "workspaceFolder" => out.push_str(&folder),
            "workspaceFolderBasename" => out.push_str(
                &workspace
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            ),
            "userHome" => out.push_str("${HOME}"),
            "pathSeparator" | "/" => out.push('/'),
            _ => {
                if let Some(name) = inner.strip_prefix("env:") {
                    out.push_str(&format!("${{{name}}}"));
                } else if let Some(id) = inner.strip_prefix("input:") {
                    return Err(format!(
                        "{CONFIG_VSCODE_UNSUPPORTED}: {place} uses ${{input:{id}}}, a value VS Code prompts for (declared in \"inputs\"); mcp-sandbox has no editor to ask: put the value in a host environment variable and write ${{env:NAME}} instead"
                    ));
                } else if let Some((kind @ ("command" | "config"), what)) = inner.split_once(':') {
                    return Err(format!(
                        "{CONFIG_VSCODE_UNSUPPORTED}: {place} uses ${{{kind}:{what}}}, which only VS Code can resolve (a {}); write the value, or ${{env:NAME}} with it in a host environment variable",
                        if kind == "command" { "VS Code command" } else { "VS Code setting" }
                    ));
                } else {
                    out.push_str(&format!("${{{inner}}}"));
                }
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Puts VS Code's variables of one entry in this host's form, expands what is expanded when
/// the config is read (`command`, `args`, `cwd`, `envFile`, `url`), and reads its `envFile`.
pub fn resolve(
    name: &str,
    server: &mut ServerConfig,
    base_dir: &Path,
    workspace: &Path,
) -> Result<(), String> {
    let place = |key: &str| format!("server '{name}': {key}");
    let now = |text: &str, key: &str| -> Result<String, String> {
        let text = translate(text, &place(key), workspace)?;
        expand(&text, &place(key), host_var).map_err(|e| e.to_string())
    };
    server.command = now(&server.command, "command")?;
    for (i, arg) in server.args.iter_mut().enumerate() {
        *arg = now(arg, &format!("args[{i}]"))?;
    }
    // `files` paths too, keeping the scope variables for each process to fill in.
    let keep_scope = |v: &str| {
        if v == super::server_entry::TENANT_VAR || v == super::server_entry::PRINCIPAL_VAR {
            Some(format!("${{{v}}}"))
        } else {
            host_var(v)
        }
    };
    for (kind, paths) in [
        ("read", &mut server.files.read),
        ("write", &mut server.files.write),
    ] {
        for (i, p) in paths.iter_mut().enumerate() {
            let key = place(&format!("files.{kind}[{i}]"));
            let text = translate(p, &key, workspace)?;
            *p = expand(&text, &key, keep_scope).map_err(|e| e.to_string())?;
        }
    }
    if let Some(cwd) = &server.cwd {
        server.cwd = Some(PathBuf::from(now(&cwd.to_string_lossy(), "cwd")?));
    }
    if let Some(url) = &server.url {
        server.url = Some(now(url, "url")?);
    }
    for (key, value) in server.env.iter_mut() {
        *value = translate(value, &place(&format!("env.{key}")), workspace)?;
    }
    for (key, value) in server.headers.iter_mut() {
        *value = translate(value, &place(&format!("headers.{key}")), workspace)?;
    }
    if let Some(file) = server.env_file.take() {
        let file = now(&file, "envFile")?;
        let path = base_dir.join(&file);
        for (key, value) in
            read_env_file(&path).map_err(|e| place(&format!("envFile {}: {e}", path.display())))?
        {
            // The entry's own `env` wins, as in VS Code.
            server.env.entry(key).or_insert(value);
        }
    }
    Ok(())
}

/// The variables of a dotenv file (`NAME=value`, `export`, quotes, `#` comments).
fn read_env_file(path: &Path) -> Result<Vec<(String, String)>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read it: {e}"))?;
    if meta.len() > MAX_ENV_FILE_BYTES {
        return Err(format!(
            "it is larger than {} KiB",
            MAX_ENV_FILE_BYTES / 1024
        ));
    }
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read it: {e}"))?;
    dotenvy::from_read_iter(file)
        .map(|item| item.map_err(|e| format!("not a dotenv file: {e}")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vs_code_variables_are_translated_or_refused_by_name() {
        let w = Path::new("/home/me/project");
        let t = |s: &str| translate(s, "server 'x': args[0]", w);
        assert_eq!(
            t("${workspaceFolder}/srv.js").unwrap(),
            "/home/me/project/srv.js"
        );
        assert_eq!(t("${workspaceFolderBasename}").unwrap(), "project");
        assert_eq!(t("${env:TOKEN}x${userHome}").unwrap(), "${TOKEN}x${HOME}");
        assert_eq!(t("a${/}b${pathSeparator}c").unwrap(), "a/b/c");
        assert_eq!(t("${KEEP} $x ${").unwrap(), "${KEEP} $x ${");
        let err = t("--key=${input:api-key}").unwrap_err();
        assert_eq!(
            err,
            "CONFIG_VSCODE_UNSUPPORTED: server 'x': args[0] uses ${input:api-key}, a value VS Code prompts for (declared in \"inputs\"); mcp-sandbox has no editor to ask: put the value in a host environment variable and write ${env:NAME} instead"
        );
        assert!(t("${command:pick}")
            .unwrap_err()
            .contains("VS Code command"));
        assert!(t("${config:editor.x}")
            .unwrap_err()
            .contains("VS Code setting"));
        assert_eq!(
            workspace_folder(Path::new("/home/me/project/.vscode")),
            w.to_path_buf()
        );
        assert_eq!(workspace_folder(w), w.to_path_buf());
    }
}
