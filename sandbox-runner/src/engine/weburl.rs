//! The natives behind `URL` and `URLSearchParams`: WHATWG URL parsing and the
//! `application/x-www-form-urlencoded` format, both from the `url` crate (`url::quirks` is its
//! implementation of the URL standard's getters and setters). The classes are in `web.js`.

use super::convert::js_text;
use rquickjs::function::Opt;
use url::{form_urlencoded, quirks, Url};

/// `[href, origin, protocol, username, password, host, hostname, port, pathname, search, hash]`,
/// the order `web.js` reads them in.
fn components(url: &Url) -> Vec<String> {
    vec![
        quirks::href(url).to_string(),
        origin(url),
        quirks::protocol(url).to_string(),
        quirks::username(url).to_string(),
        quirks::password(url).to_string(),
        quirks::host(url).to_string(),
        quirks::hostname(url).to_string(),
        quirks::port(url).to_string(),
        quirks::pathname(url).to_string(),
        quirks::search(url).to_string(),
        quirks::hash(url).to_string(),
    ]
}

/// The URL standard's origin. For `blob:` URLs the standard now gives the inner URL's origin only
/// when that is `http:` or `https:` (else an opaque origin, `"null"`); `url` 2.5 gives any inner
/// URL's origin.
fn origin(url: &Url) -> String {
    if url.scheme() == "blob" {
        return match Url::parse(url.path()) {
            Ok(inner) if matches!(inner.scheme(), "http" | "https") => quirks::origin(&inner),
            _ => "null".to_string(),
        };
    }
    quirks::origin(url)
}

/// Parses `input` against the optional `base`; `None` when either is not a valid URL.
pub fn parse(input: rquickjs::String<'_>, base: Opt<rquickjs::String<'_>>) -> Option<Vec<String>> {
    let input = js_text(&input);
    let base = match base.0 {
        Some(b) => Some(Url::parse(&js_text(&b)).ok()?),
        None => None,
    };
    Url::options()
        .base_url(base.as_ref())
        .parse(&input)
        .ok()
        .map(|u| components(&u))
}

/// Applies one setter (`"protocol"`, `"search"`, …) to the URL `href` and returns the new
/// components. A value the standard rejects leaves the URL unchanged, as in browsers; only an
/// invalid `href` is an error (`None`).
pub fn set(href: String, name: String, value: rquickjs::String<'_>) -> Option<Vec<String>> {
    let mut url = Url::parse(&href).ok()?;
    let value = js_text(&value);
    let v = value.as_str();
    let ignored = match name.as_str() {
        "href" => {
            quirks::set_href(&mut url, v).ok()?;
            Ok(())
        }
        "protocol" => quirks::set_protocol(&mut url, v),
        "username" => quirks::set_username(&mut url, v),
        "password" => quirks::set_password(&mut url, v),
        "host" => quirks::set_host(&mut url, v),
        "hostname" => quirks::set_hostname(&mut url, v),
        "port" => quirks::set_port(&mut url, v),
        "pathname" => {
            quirks::set_pathname(&mut url, v);
            Ok(())
        }
        "search" => {
            quirks::set_search(&mut url, v);
            Ok(())
        }
        "hash" => {
            quirks::set_hash(&mut url, v);
            Ok(())
        }
        _ => Err(()),
    };
    let _ = ignored; // a rejected value keeps the URL as it was
    Some(components(&url))
}

/// A query string (without its `?`) as `[name, value, name, value, …]`.
pub fn search_parse(query: rquickjs::String<'_>) -> Vec<String> {
    let query = js_text(&query);
    form_urlencoded::parse(query.as_bytes())
        .flat_map(|(k, v)| [k.into_owned(), v.into_owned()])
        .collect()
}

/// `[name, value, …]` as `application/x-www-form-urlencoded` text.
pub fn search_serialize(pairs: Vec<rquickjs::String<'_>>) -> String {
    let mut out = form_urlencoded::Serializer::new(String::new());
    for pair in pairs.chunks(2) {
        if let [k, v] = pair {
            out.append_pair(&js_text(k), &js_text(v));
        }
    }
    out.finish()
}
