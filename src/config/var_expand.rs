//! `${VAR}` in a server entry's `headers` and `env` (and an OpenAPI entry's `auth`): finding the
//! references and replacing them from the host's environment. Used by both entries' checks
//! (`server_entry`, which re-exports it, and `openapi_entry`).

/// A `${VAR}` whose variable is not set.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{place} uses ${{{var}}}, which is not set in the host's environment: set it before starting mcp-sandbox")]
pub struct MissingVar {
    pub place: String,
    pub var: String,
}

/// `NAME` or `NAME:-default` between `${` and `}`: the name and the default.
fn reference(inner: &str) -> Option<(&str, Option<&str>)> {
    let (name, default) = match inner.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (inner, None),
    };
    is_name(name).then_some((name, default))
}

/// The `${NAME}` references of `text`, in order.
pub fn references(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        match after
            .find('}')
            .and_then(|end| reference(&after[..end]).map(|r| (end, r)))
        {
            Some((end, (name, _))) => {
                out.push(name);
                rest = &after[end + 1..];
            }
            None => rest = after,
        }
    }
    out
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `text` with each `${NAME}` replaced by `lookup(NAME)`.
pub fn expand(
    text: &str,
    place: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, MissingVar> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after
            .find('}')
            .and_then(|end| reference(&after[..end]).map(|r| (end, r)))
        {
            Some((end, (var, default))) => {
                let value = lookup(var)
                    .or_else(|| default.map(str::to_string))
                    .ok_or_else(|| MissingVar {
                        place: place.to_string(),
                        var: var.to_string(),
                    })?;
                out.push_str(&value);
                rest = &after[end + 1..];
            }
            None => {
                out.push_str("${");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The host's variable `name` (when it is valid UTF-8).
pub fn host_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}
