//! `controller.quorum.bootstrap.servers`: Kafka's `host:port,host:port,...` list of where a
//! node without a leader (an observer, a voter cut off from its leader) asks who leads, for a
//! quorum with static `controller.quorum.voters`. Each entry becomes an id the core routes by
//! ([`crate::RaftConfig::bootstrap_servers`]) and an endpoint the driver connects to: the
//! voter whose endpoint it names, when one does, so a reply from it counts as that voter's;
//! otherwise a negative id, -2, -3, ... in list order, as Kafka's `KafkaRaftClient` numbers
//! its bootstrap nodes (-1 is "no node"). A reply from such an entry that names a leader
//! sends the node to that voter's endpoint (`controller.quorum.voters`).

use std::collections::BTreeMap;

use super::voters::VoterEndpoint;

/// The id of the first bootstrap server that names no voter; the next ones count down.
pub const FIRST_BOOTSTRAP_ID: i32 = -2;

/// A `controller.quorum.bootstrap.servers` value that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("entry {entry:?}: {reason}")]
pub struct BootstrapServersParseError {
    /// The offending entry, as written.
    pub entry: String,
    pub reason: String,
}

/// Parses `host:port,...` and maps each entry to the voter of `voters` whose endpoint it
/// names (host compared without case, port equal), else to the next negative id from
/// [`FIRST_BOOTSTRAP_ID`]. Empty entries are skipped, as Kafka's
/// `ClientUtils.parseAndValidateAddresses` does; a missing or zero port, an unbracketed IPv6
/// host and an endpoint given twice (or two entries naming one voter) are refused.
pub fn parse_bootstrap_servers(
    value: &str,
    voters: &BTreeMap<i32, VoterEndpoint>,
) -> Result<Vec<VoterEndpoint>, BootstrapServersParseError> {
    let mut servers: Vec<VoterEndpoint> = Vec::new();
    let mut next_id = FIRST_BOOTSTRAP_ID;
    for raw in value.split(',') {
        let entry = raw.trim();
        if entry.is_empty() {
            continue;
        }
        let bad = |reason: &str| BootstrapServersParseError {
            entry: entry.to_string(),
            reason: reason.to_string(),
        };
        let (host, port) = entry
            .rsplit_once(':')
            .ok_or_else(|| bad("expected host:port"))?;
        if host.is_empty() {
            return Err(bad("the host is empty"));
        }
        if host.contains('@') {
            return Err(bad(
                "expected host:port (id@host:port is controller.quorum.voters')",
            ));
        }
        if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
            return Err(bad("an IPv6 host must be in brackets"));
        }
        let port: u16 = port.parse().map_err(|_| bad("the port is not 1-65535"))?;
        if port == 0 {
            return Err(bad("the port is not 1-65535"));
        }
        let same = |e: &VoterEndpoint| e.port == port && e.host.eq_ignore_ascii_case(host);
        if servers.iter().any(same) {
            return Err(bad("the endpoint appears twice"));
        }
        let id = match voters.values().find(|v| same(v)) {
            Some(voter) => {
                if servers.iter().any(|s| s.id == voter.id) {
                    return Err(bad("names a voter another entry names"));
                }
                voter.id
            }
            None => {
                let id = next_id;
                next_id -= 1;
                id
            }
        };
        servers.push(VoterEndpoint {
            id,
            host: host.to_string(),
            port,
        });
    }
    Ok(servers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::parse_voters;

    #[test]
    fn entries_naming_a_voter_take_its_id_others_negative_ids_in_order() {
        let voters = parse_voters("1@localhost:9093,2@10.0.0.2:9094,3@[::1]:9095").unwrap();
        let b = parse_bootstrap_servers(
            "lb.example:9093, LOCALHOST:9093,other:1,[::1]:9095,,10.0.0.2:9095",
            &voters,
        )
        .unwrap();
        let ids: Vec<i32> = b.iter().map(|s| s.id).collect();
        assert_eq!(ids, vec![-2, 1, -3, 3, -4]);
        assert_eq!(b[0].address(), "lb.example:9093");
        assert_eq!(b[3].host, "[::1]");
        assert!(parse_bootstrap_servers(" , ", &voters).unwrap().is_empty());
    }

    #[test]
    fn names_the_bad_entry() {
        let voters = parse_voters("1@a:1,2@b:2").unwrap();
        for (value, entry) in [
            ("a:1,b", "b"),
            ("a:1,:9", ":9"),
            ("a:1,b:0", "b:0"),
            ("a:1,b:70000", "b:70000"),
            ("a:1,b:x", "b:x"),
            ("c:1,C:1", "C:1"),
            ("a:1,A:1", "A:1"),
            ("::1:9", "::1:9"),
            ("1@a:1", "1@a:1"),
        ] {
            let e = parse_bootstrap_servers(value, &voters).unwrap_err();
            assert_eq!(e.entry, entry, "{value}");
            assert!(e.to_string().contains(entry), "{e}");
        }
    }
}
