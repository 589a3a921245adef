//! CIDR blocks as commons-net reads them for Kafka's `CidrUtils` (the differential test
//! against Kafka's own class is `crates/cli/tests/cidr_acls_kafka.rs`).

use super::*;

#[test]
fn ipv4_blocks_include_their_network_and_last_address() {
    let cidr = Cidr::parse("10.1.2.3/24").unwrap();
    assert_eq!(
        cidr,
        Cidr::V4 {
            network: 0x0a01_0200,
            last: 0x0a01_02ff
        }
    );
    assert!(cidr.contains("10.1.2.0"));
    assert!(cidr.contains("10.1.2.255"));
    assert!(!cidr.contains("10.1.3.0"));
    assert!(host_in_range("127.0.0.1", "127.0.0.1/32"));
    assert!(host_in_range("8.8.8.8", "0.0.0.0/0"));
    assert!(
        !host_in_range("0.0.0.0", "0.0.0.0/0"),
        "commons-net 3.13 never matches 0.0.0.0"
    );
    assert!(!host_in_range("0:0:0:0:0:0:0:1", "0.0.0.0/0"));
}

#[test]
fn ipv6_blocks_match_java_formatted_hosts() {
    assert!(host_in_range("2001:db8:0:0:0:0:0:1", "2001:db8::/32"));
    assert!(host_in_range("0:0:0:0:0:0:0:1", "::1/128"));
    assert!(host_in_range("fe80:0:0:0:0:0:0:1%2", "fe80::/10"));
    assert!(!host_in_range("2001:db9:0:0:0:0:0:1", "2001:db8::/32"));
    assert!(!host_in_range("127.0.0.1", "::/0"));
}

#[test]
fn refusals_carry_commons_net_messages() {
    assert_eq!(
        Cidr::parse("10.0.0.256/8").unwrap_err(),
        "Value [256] not in range [0,255]"
    );
    assert_eq!(
        Cidr::parse("10.0.0.0/33").unwrap_err(),
        "Value [33] not in range [0,32]"
    );
    assert_eq!(
        Cidr::parse("10.0.0.0/033").unwrap_err(),
        "Could not parse [10.0.0.0/033]"
    );
    assert_eq!(
        Cidr::parse("10.0.0/8").unwrap_err(),
        "Could not parse [10.0.0/8]"
    );
    assert_eq!(
        Cidr::parse("2001:db8::/129").unwrap_err(),
        "Could not parse [2001:db8::/129] - prefix length must be between 0 and 128"
    );
    assert_eq!(
        Cidr::parse("2001:db8::/x").unwrap_err(),
        "Could not parse [2001:db8::/x] - invalid prefix length"
    );
    assert_eq!(
        Cidr::parse("::ffff:10.0.0.0/104").unwrap_err(),
        "Could not parse [::ffff:10.0.0.0] - not an IPv6 address"
    );
    assert_eq!(
        Cidr::parse("2001:zz8::/32").unwrap_err(),
        "Could not parse [2001:zz8::]"
    );
}

#[test]
fn a_host_without_a_slash_is_never_a_range() {
    assert!(!host_in_range("10.0.0.1", "10.0.0.1"));
    assert!(!host_in_range("10.0.0.1", "*"));
}
