//! `controller.quorum.voters`: Kafka's static voter list, `id@host:port,id@host:port,...`,
//! parsed into typed endpoints. A bad entry is reported by itself (the entry and why), so an
//! operator sees which of five voters is mistyped.

use std::collections::BTreeMap;
use std::fmt;

use crate::core::endpoints::Endpoint;

/// One voter's id and Raft endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VoterEndpoint {
    pub id: i32,
    /// A host name, an IPv4 address, or an IPv6 address in brackets (`[::1]`).
    pub host: String,
    pub port: u16,
}

impl VoterEndpoint {
    /// `host:port`, what a TCP connect takes.
    pub fn address(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The endpoint as the Raft messages carry it (KIP-853): an IPv6 literal without its
    /// brackets, as Java's `getHostString`.
    pub fn wire_endpoint(&self) -> Endpoint {
        Endpoint {
            host: self
                .host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port: self.port,
        }
    }
}

impl fmt::Display for VoterEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}:{}", self.id, self.host, self.port)
    }
}

/// A `controller.quorum.voters` value that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("controller.quorum.voters: entry {entry:?}: {reason}")]
pub struct VotersParseError {
    /// The offending entry, as written.
    pub entry: String,
    pub reason: String,
}

/// Parses `id@host:port,...` into endpoints by id. Empty entries (a trailing comma) are
/// refused, as are duplicate ids, negative ids, and ports outside 1..=65535.
pub fn parse_voters(value: &str) -> Result<BTreeMap<i32, VoterEndpoint>, VotersParseError> {
    let mut voters = BTreeMap::new();
    for raw in value.split(',') {
        let entry = raw.trim();
        let bad = |reason: &str| VotersParseError {
            entry: entry.to_string(),
            reason: reason.to_string(),
        };
        if entry.is_empty() {
            return Err(bad("empty entry"));
        }
        let (id, endpoint) = entry
            .split_once('@')
            .ok_or_else(|| bad("expected id@host:port"))?;
        let id: i32 = id
            .trim()
            .parse()
            .map_err(|_| bad("the id is not an integer"))?;
        if id < 0 {
            return Err(bad("the id is negative"));
        }
        let (host, port) = endpoint
            .rsplit_once(':')
            .ok_or_else(|| bad("expected host:port after '@'"))?;
        if host.is_empty() {
            return Err(bad("the host is empty"));
        }
        if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
            return Err(bad("an IPv6 host must be in brackets"));
        }
        let port: u16 = port.parse().map_err(|_| bad("the port is not 1-65535"))?;
        if port == 0 {
            return Err(bad("the port is not 1-65535"));
        }
        let voter = VoterEndpoint {
            id,
            host: host.to_string(),
            port,
        };
        if voters.insert(id, voter).is_some() {
            return Err(bad("the id appears twice"));
        }
    }
    Ok(voters)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kafkas_syntax() {
        let v = parse_voters("1@localhost:9093, 2@10.0.0.2:9094,3@[::1]:9095").unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v[&1].address(), "localhost:9093");
        assert_eq!(v[&3].host, "[::1]");
        assert_eq!(v[&3].to_string(), "3@[::1]:9095");
    }

    #[test]
    fn names_the_bad_entry() {
        for (value, entry) in [
            ("1@a:1,x@b:2", "x@b:2"),
            ("1@a:1,2b:2", "2b:2"),
            ("1@a:1,2@b", "2@b"),
            ("1@a:1,2@b:0", "2@b:0"),
            ("1@a:1,2@b:70000", "2@b:70000"),
            ("1@a:1,1@b:2", "1@b:2"),
            ("1@a:1,", ""),
            ("1@::1:9", "1@::1:9"),
            ("-1@a:1", "-1@a:1"),
        ] {
            let e = parse_voters(value).unwrap_err();
            assert_eq!(e.entry, entry, "{value}");
            assert!(e.to_string().contains(entry), "{e}");
        }
    }
}
