//! Target URLs: `http://` and `https://` only.

use std::fmt;

/// URL scheme of a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

/// A parsed target URL: scheme, host, port and path-with-query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub scheme: Scheme,
    /// Host name or IP literal, without IPv6 brackets.
    pub host: String,
    pub port: u16,
    /// Path plus query, always starting with `/` (`/` when the URL has none).
    pub path: String,
}

impl Target {
    /// Parse `http[s]://host[:port][/path][?query]`. Hosts may be names,
    /// IPv4 literals or bracketed IPv6 literals (`[::1]`). Fragments are
    /// dropped; user-info is refused.
    ///
    /// # Errors
    /// A message naming the problem: missing or unsupported scheme, empty
    /// host, bad port, unclosed IPv6 bracket, user-info present.
    pub fn parse(url: &str) -> Result<Target, String> {
        let url = url.trim();
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| format!("malformed URL {url:?}: expected http://HOST[:PORT]/PATH"))?;
        let scheme = match scheme.to_ascii_lowercase().as_str() {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            other => {
                return Err(format!(
                    "unsupported scheme {other:?} in {url:?}: only http and https are supported"
                ))
            }
        };
        let rest = rest.split('#').next().unwrap_or("");
        let cut = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(cut);
        let path = match tail {
            "" => "/".to_string(),
            t if t.starts_with('?') => format!("/{t}"),
            t => t.to_string(),
        };
        if authority.contains('@') {
            return Err(format!(
                "malformed URL {url:?}: user-info (user@host) is not supported"
            ));
        }
        let (host, port) = split_host_port(authority, url)?;
        let port = port.unwrap_or(match scheme {
            Scheme::Http => 80,
            Scheme::Https => 443,
        });
        Ok(Target {
            scheme,
            host,
            port,
            path,
        })
    }

    /// The `Host` header value: host plus port unless it is the default.
    pub fn host_header(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let default = matches!(
            (self.scheme, self.port),
            (Scheme::Http, 80) | (Scheme::Https, 443)
        );
        if default {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.scheme == Scheme::Https {
            "https"
        } else {
            "http"
        };
        write!(f, "{scheme}://{}{}", self.host_header(), self.path)
    }
}

fn split_host_port(authority: &str, url: &str) -> Result<(String, Option<u16>), String> {
    let (host, port) = if let Some(after) = authority.strip_prefix('[') {
        let (h, rest) = after
            .split_once(']')
            .ok_or_else(|| format!("malformed URL {url:?}: unclosed '[' in IPv6 host"))?;
        if h.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!(
                "malformed URL {url:?}: {h:?} is not an IPv6 address"
            ));
        }
        match rest {
            "" => (h, None),
            r if r.starts_with(':') => (h, Some(&r[1..])),
            _ => return Err(format!("malformed URL {url:?}: junk after ']'")),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(format!("malformed URL {url:?}: no host"));
    }
    if host.contains(':') && !authority.starts_with('[') {
        return Err(format!(
            "malformed URL {url:?}: write IPv6 hosts in brackets, e.g. http://[::1]:8080/"
        ));
    }
    let port = match port {
        None => None,
        Some(p) => Some(
            p.parse::<u16>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| format!("malformed URL {url:?}: port {p:?} is not in 1-65535"))?,
        ),
    };
    Ok((host.to_string(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_host_port_path_query() {
        let t = Target::parse("http://127.0.0.1:8080/a/b?x=1#frag").unwrap();
        assert_eq!(t.scheme, Scheme::Http);
        assert_eq!(t.host, "127.0.0.1");
        assert_eq!(t.port, 8080);
        assert_eq!(t.path, "/a/b?x=1");
        assert_eq!(t.host_header(), "127.0.0.1:8080");
    }

    #[test]
    fn defaults_port_and_path() {
        let t = Target::parse("HTTPS://example.test").unwrap();
        assert_eq!(
            (t.scheme, t.port, t.path.as_str()),
            (Scheme::Https, 443, "/")
        );
        assert_eq!(t.host_header(), "example.test");
        assert_eq!(Target::parse("http://h?q=1").unwrap().path, "/?q=1");
    }

    #[test]
    fn parses_ipv6_literal() {
        let t = Target::parse("http://[::1]:9000/x").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 9000));
        assert_eq!(t.host_header(), "[::1]:9000");
        assert_eq!(t.to_string(), "http://[::1]:9000/x");
    }

    #[test]
    fn rejects_bad_urls_with_clear_messages() {
        let cases = [
            ("ftp://h/", "unsupported scheme"),
            ("127.0.0.1:80", "malformed URL"),
            ("http:///x", "no host"),
            ("http://h:0/", "port"),
            ("http://h:99999/", "port"),
            ("http://h:abc/", "port"),
            ("http://[::1/", "unclosed"),
            ("http://[zz]/", "not an IPv6"),
            ("http://::1/", "brackets"),
            ("http://u@h/", "user-info"),
        ];
        for (url, want) in cases {
            let err = Target::parse(url).unwrap_err();
            assert!(err.contains(want), "{url}: {err}");
        }
    }
}
