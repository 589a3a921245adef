//! The network the chaos harness controls: every node in a network namespace of its own,
//! joined to the root namespace by a veth pair, and partitions as policy-routing rules in the
//! root namespace.
//!
//! Why namespaces and not a TCP proxy per node pair: with its own namespace each node has
//! its own address (`10.<net>.<id>.2`), so it listens, advertises and is reached on that
//! address alone, exactly as on separate machines; its config is the ordinary one. With
//! proxies every node would have to reach every peer through a pair-specific address, but a
//! broker learns its peers' addresses from the metadata (their advertised listeners), one
//! address per broker for all: a proxy could not tell which pair a connection belongs to.
//! Here all node-to-node traffic is routed through the root namespace (`ip_forward`), where
//! `ip rule add from A to B blackhole` drops the packets of one direction silently, as a cut
//! cable does (no reset: the peer finds out by its own timeouts), for new and established
//! connections alike; one rule per direction gives one-way partitions. iptables may be
//! missing: iproute2 is all it needs.
//!
//! A slow link ([`Lab::slow`]) is a token-bucket filter (`tc qdisc ... tbf`) on both ends of
//! the node's veth pair: egress in its namespace (what it sends) and egress on the root side
//! (what it receives, from peers and clients alike). The kernel here has no `sch_netem`
//! (`tc qdisc ... netem delay` fails), so there is no fixed delay or loss to add; tbf is in
//! every kernel and gives what a slow WAN link or a saturated NIC does: a rate of
//! [`SLOW_LINK`]'s few hundred kbit/s, packets queued behind it (up to its `latency` of
//! queueing, so round trips of hundreds of ms under load) and tail drops beyond that. The
//! clients (the workload) run in the root namespace and reach every node on its address; no
//! rule ever cuts them (a slowed node is slow to them too).
//!
//! It needs root. [`Lab::create`] fails with a message saying so when it cannot make a
//! namespace; dropping the [`Lab`] removes its rules and namespaces (their veths go with
//! them).

use std::net::Ipv4Addr;
use std::process::Command;

use anyhow::{bail, Context, Result};

const IP_FORWARD: &str = "/proc/sys/net/ipv4/ip_forward";

/// The namespaces, veths and partition rules of one chaos run.
pub(super) struct Lab {
    /// Unique to this run (the harness's pid): the prefix of its namespace and veth names.
    tag: String,
    /// The second octet of this run's addresses: node `id` is `10.<net>.<id>.2`.
    net: u8,
    ids: Vec<u32>,
    /// The blackhole rules in place, as (from, to) node ids.
    cuts: Vec<(u32, u32)>,
    /// The nodes whose links are slowed ([`Lab::slow`]).
    slowed: Vec<u32>,
    /// `ip_forward` as found, put back when the last chaos run's namespaces are gone.
    forward_before: String,
}

impl Lab {
    /// A namespace per node id, each reachable from the root namespace and from the others.
    pub(super) fn create(ids: &[u32]) -> Result<Lab> {
        let tag = format!("kc{}", std::process::id());
        let net = free_net()?;
        let mut lab = Lab {
            tag,
            net,
            ids: Vec::new(),
            cuts: Vec::new(),
            slowed: Vec::new(),
            forward_before: std::fs::read_to_string(IP_FORWARD).unwrap_or_default(),
        };
        for &id in ids {
            if id == 0 || id > 250 {
                bail!("node id {id} does not fit an address octet");
            }
            let ns = lab.ns(id);
            let (host, peer) = lab.veths(id);
            if let Err(e) = ip(&["netns", "add", &ns]) {
                bail!(
                    "cannot create network namespace {ns} ({e:#}): the chaos harness needs \
                     root (CAP_NET_ADMIN) and iproute2's `ip netns`"
                );
            }
            lab.ids.push(id);
            let root_ip = format!("10.{net}.{id}.1");
            ip(&["link", "add", &host, "type", "veth", "peer", "name", &peer])?;
            ip(&["link", "set", &peer, "netns", &ns])?;
            ip(&["addr", "add", &format!("{root_ip}/24"), "dev", &host])?;
            ip(&["link", "set", &host, "up"])?;
            let node_cidr = format!("{}/24", lab.ip(id));
            ip(&["-n", &ns, "addr", "add", &node_cidr, "dev", &peer])?;
            ip(&["-n", &ns, "link", "set", &peer, "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            ip(&["-n", &ns, "route", "add", "default", "via", &root_ip])?;
        }
        // Node-to-node traffic is routed through the root namespace.
        std::fs::write(IP_FORWARD, "1").with_context(|| format!("turning on {IP_FORWARD}"))?;
        Ok(lab)
    }

    /// Node `id`'s address.
    pub(super) fn ip(&self, id: u32) -> Ipv4Addr {
        Ipv4Addr::new(10, self.net, id as u8, 2)
    }

    /// Node `id`'s namespace.
    pub(super) fn ns(&self, id: u32) -> String {
        format!("{}-{id}", self.tag)
    }

    /// A command run inside node `id`'s namespace (`ip netns exec` execs it in place, so
    /// the child's pid is the program's own).
    pub(super) fn command(&self, id: u32, program: &std::path::Path) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.ns(id)]).arg(program);
        cmd
    }

    /// Node `id`'s veth pair: (the root namespace's end, the node's end).
    fn veths(&self, id: u32) -> (String, String) {
        (format!("{}h{id}", self.tag), format!("{}n{id}", self.tag))
    }

    /// Slows node `id`'s link both ways: [`SLOW_LINK`] as the root qdisc of the node's end of
    /// its veth (what it sends) and of the root namespace's end (what it receives).
    pub(super) fn slow(&mut self, id: u32) -> Result<()> {
        if self.slowed.contains(&id) {
            return Ok(());
        }
        let (host, peer) = self.veths(id);
        let ns = self.ns(id);
        let tbf: Vec<&str> = SLOW_LINK.split_whitespace().collect();
        tc(&[&["qdisc", "add", "dev", &host, "root"], &tbf[..]].concat())?;
        self.slowed.push(id);
        tc(&[&["-n", &ns, "qdisc", "add", "dev", &peer, "root"], &tbf[..]].concat())
    }

    /// Drops every packet from node `from` to node `to` (one direction).
    pub(super) fn cut(&mut self, from: u32, to: u32) -> Result<()> {
        if from == to || self.cuts.contains(&(from, to)) {
            return Ok(());
        }
        let (a, b) = (self.ip(from).to_string(), self.ip(to).to_string());
        ip(&[
            "rule",
            "add",
            "from",
            &a,
            "to",
            &b,
            "blackhole",
            "pref",
            "100",
        ])?;
        self.cuts.push((from, to));
        Ok(())
    }

    /// Whether a cut now drops packets to or from node `id`.
    pub(super) fn cut_off(&self, id: u32) -> bool {
        self.cuts.iter().any(|&(from, to)| from == id || to == id)
    }

    /// Cuts every node of `a` from every node of `b`, both ways.
    pub(super) fn cut_between(&mut self, a: &[u32], b: &[u32]) -> Result<()> {
        for &x in a {
            for &y in b {
                self.cut(x, y)?;
                self.cut(y, x)?;
            }
        }
        Ok(())
    }

    /// Removes every cut and every slow link.
    pub(super) fn heal(&mut self) -> Result<()> {
        let mut first_error = None;
        for id in std::mem::take(&mut self.slowed) {
            let (host, peer) = self.veths(id);
            let ns = self.ns(id);
            // Deleting a root qdisc that is not there fails ("Cannot delete qdisc with handle
            // of zero"): a node whose first end failed to slow has no second one.
            for args in [
                vec!["qdisc", "del", "dev", &host, "root"],
                vec!["-n", &ns, "qdisc", "del", "dev", &peer, "root"],
            ] {
                if let Err(e) = tc(&args) {
                    if !format!("{e}").contains("handle of zero") {
                        first_error.get_or_insert(e);
                    }
                }
            }
        }
        for (from, to) in std::mem::take(&mut self.cuts) {
            let (a, b) = (self.ip(from).to_string(), self.ip(to).to_string());
            if let Err(e) = ip(&[
                "rule",
                "del",
                "from",
                &a,
                "to",
                &b,
                "blackhole",
                "pref",
                "100",
            ]) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if let Err(e) = self.heal() {
            eprintln!("chaos: removing partition rules: {e:#}");
        }
        for id in std::mem::take(&mut self.ids) {
            if let Err(e) = ip(&["netns", "del", &self.ns(id)]) {
                eprintln!("chaos: removing namespace {}: {e:#}", self.ns(id));
            }
        }
        let others = Command::new("ip")
            .args(["netns", "list"])
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .any(|l| l.starts_with("kc"))
            })
            .unwrap_or(true);
        if !others && self.forward_before.trim() == "0" {
            let _ = std::fs::write(IP_FORWARD, "0");
        }
    }
}

/// A second octet for `10.x.0.0/16` that no address or route of the root namespace uses
/// (another run's included).
fn free_net() -> Result<u8> {
    let out = Command::new("ip").args(["-4", "route", "show"]).output()?;
    let routes = String::from_utf8_lossy(&out.stdout).to_string();
    let out = Command::new("ip").args(["-4", "addr", "show"]).output()?;
    let addrs = String::from_utf8_lossy(&out.stdout).to_string();
    let pid = std::process::id();
    (0..50u32)
        .map(|i| 200 + ((pid + i) % 50) as u8)
        .find(|net| {
            let prefix = format!("10.{net}.");
            !routes.contains(&prefix) && !addrs.contains(&prefix)
        })
        .context("no free 10.200-249.0.0/16 network for the chaos namespaces")
}

/// The slow link's token bucket (`tc qdisc add dev D root` and these): 300 kbit/s, a burst
/// of 32 kbit, and packets queued up to 400 ms behind the rate before they are dropped.
pub(super) const SLOW_LINK: &str = "tbf rate 300kbit burst 32kbit latency 400ms";

/// `ip args...`, failing with its stderr.
fn ip(args: &[&str]) -> Result<()> {
    iproute2("ip", args)
}

/// `tc args...`, failing with its stderr.
fn tc(args: &[&str]) -> Result<()> {
    iproute2("tc", args)
}

/// One of iproute2's tools, failing with its stderr.
fn iproute2(program: &str, args: &[&str]) -> Result<()> {
    let out = Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("running `{program}` (iproute2)"))?;
    if !out.status.success() {
        bail!(
            "`{program} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}
