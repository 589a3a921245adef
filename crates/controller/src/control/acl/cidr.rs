//! CIDR host patterns in ACLs (KIP-1276, `metadata.version` 4.4-IV1), as Kafka 4.4's
//! `CidrUtils` reads them with commons-net's `SubnetUtils` (IPv4) and `SubnetUtils6`
//! (IPv6): a pattern with a `:` is IPv6, else IPv4; a host is in range when its address lies
//! between the network and the last address of the block, both included (Kafka turns on
//! `inclusiveHostCount`). The refusal messages are commons-net's, which Kafka's
//! `AclControlManager` wraps in "Invalid CIDR notation '<pattern>': ...".
//!
//! Parsed on every check of an ACL whose host has a `/` (a few dozen nanoseconds); ACLs with
//! a literal host or `*` never come here.

use std::net::Ipv6Addr;

/// One parsed CIDR block: its first and last address, inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cidr {
    V4 { network: u32, last: u32 },
    V6 { network: u128, last: u128 },
}

impl Cidr {
    /// Parses `pattern` as `CidrUtils.validate` does; the error is commons-net's message.
    pub fn parse(pattern: &str) -> Result<Cidr, String> {
        if pattern.contains(':') {
            parse_v6(pattern)
        } else {
            parse_v4(pattern)
        }
    }

    /// Whether `host` (an address as Java's `getHostAddress` writes it) lies in the block.
    /// A host of the other family, or one that does not parse, is not; nor is `0.0.0.0`,
    /// which commons-net 3.13's `SubnetUtils.isInRange` never counts in any block.
    pub fn contains(&self, host: &str) -> bool {
        match *self {
            Cidr::V4 { network, last } => {
                dotted_quad(host).is_ok_and(|a| a != 0 && (network..=last).contains(&a))
            }
            Cidr::V6 { network, last } => {
                ipv6_bytes(host).is_ok_and(|a| (network..=last).contains(&a))
            }
        }
    }
}

/// Kafka's `CidrUtils.isInRange`: false unless `pattern` has a `/`, parses, and holds `host`.
pub fn host_in_range(host: &str, pattern: &str) -> bool {
    pattern.contains('/') && Cidr::parse(pattern).is_ok_and(|cidr| cidr.contains(host))
}

/// `SubnetUtils(cidr)`: `n.n.n.n/m`, each `n` 1–3 decimal digits in 0–255, `m` 1–2 digits in
/// 0–32, nothing else around them.
fn parse_v4(pattern: &str) -> Result<Cidr, String> {
    let could_not_parse = || format!("Could not parse [{pattern}]");
    let (address, bits) = pattern.split_once('/').ok_or_else(could_not_parse)?;
    if !is_digits(bits, 2) {
        return Err(could_not_parse());
    }
    let octets = split_quad(address).ok_or_else(could_not_parse)?;
    let address = pack(octets)?;
    let bits = range_check(bits, 0, 32)?;
    let netmask = (u64::from(u32::MAX) << (32 - bits)) as u32;
    let network = address & netmask;
    Ok(Cidr::V4 {
        network,
        last: network | !netmask,
    })
}

/// `SubnetUtils6(cidr)`: an IPv6 address as `InetAddress.getByName` reads a literal (an
/// IPv4-mapped one is IPv4 to Java, so refused), `/`, a prefix length in 0–128.
fn parse_v6(pattern: &str) -> Result<Cidr, String> {
    let (address, bits) = pattern
        .split_once('/')
        .ok_or_else(|| format!("Could not parse [{pattern}] - missing prefix length"))?;
    let bits: i64 = java_parse_int(bits)
        .ok_or_else(|| format!("Could not parse [{pattern}] - invalid prefix length"))?;
    if !(0..=128).contains(&bits) {
        return Err(format!(
            "Could not parse [{pattern}] - prefix length must be between 0 and 128"
        ));
    }
    let address = ipv6_bytes(address)?;
    let netmask = if bits == 0 {
        0
    } else {
        u128::MAX << (128 - bits)
    };
    let network = address & netmask;
    Ok(Cidr::V6 {
        network,
        last: network | !netmask,
    })
}

/// `SubnetUtils.toInteger`: a dotted quad of 1–3 digit decimal octets in 0–255.
fn dotted_quad(host: &str) -> Result<u32, String> {
    let octets = split_quad(host).ok_or_else(|| format!("Could not parse [{host}]"))?;
    pack(octets)
}

fn split_quad(address: &str) -> Option<[&str; 4]> {
    let mut parts = address.split('.');
    let quad = [parts.next()?, parts.next()?, parts.next()?, parts.next()?];
    (parts.next().is_none() && quad.iter().all(|p| is_digits(p, 3))).then_some(quad)
}

/// The four octets packed, each range-checked in order as `matchAddress` does.
fn pack(octets: [&str; 4]) -> Result<u32, String> {
    octets.iter().try_fold(0u32, |address, octet| {
        Ok(address << 8 | range_check(octet, 0, 255)? as u32)
    })
}

/// commons-net's `rangeCheck` of a decimal already known to be 1–3 digits.
fn range_check(digits: &str, begin: i64, end: i64) -> Result<i64, String> {
    let value: i64 = digits.parse().expect("1-3 decimal digits");
    if (begin..=end).contains(&value) {
        Ok(value)
    } else {
        Err(format!("Value [{value}] not in range [{begin},{end}]"))
    }
}

/// 1 to `max` ASCII digits (Java's `\d`).
fn is_digits(s: &str, max: usize) -> bool {
    (1..=max).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit())
}

/// Java's `Integer.parseInt`: an optional sign, then decimal digits, within i32.
fn java_parse_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<i32>().ok().map(i64::from)
}

/// `SubnetUtils6.toBytes`: an IPv6 literal, optionally in brackets, with an optional numeric
/// `%scope`; an IPv4-mapped address reads as IPv4 in Java, so it is refused. Java also takes
/// a scope naming a network interface of the machine it runs on; that lookup has no place in
/// a controller's deterministic core, so such a scope is refused here.
fn ipv6_bytes(address: &str) -> Result<u128, String> {
    let literal = address
        .strip_prefix('[')
        .and_then(|a| a.strip_suffix(']'))
        .unwrap_or(address);
    let literal = match literal.split_once('%') {
        Some((a, scope)) if is_digits(scope, 10) => a,
        Some(_) => return Err(format!("Could not parse [{address}]")),
        None => literal,
    };
    let parsed: Ipv6Addr = literal
        .parse()
        .map_err(|_| format!("Could not parse [{address}]"))?;
    if parsed.to_ipv4_mapped().is_some() {
        return Err(format!("Could not parse [{address}] - not an IPv6 address"));
    }
    Ok(u128::from(parsed))
}

#[cfg(test)]
mod tests;
