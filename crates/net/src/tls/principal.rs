//! Who a client certificate names, as Kafka sees it: the certificate's subject in RFC 2253
//! form exactly as Java's `X500Principal.getName()` prints it (`CN=alice,OU=eng,O=acme`:
//! the last RDN first, RFC 2253's keywords, other attributes as `OID=#hex`), and Kafka's
//! `SslPrincipalMapper` (`ssl.principal.mapping.rules`: `RULE:pattern/replacement/[LU]`
//! and `DEFAULT`, tried in order, the first that matches the whole name wins) turning it
//! into the principal's name; the serial number and subject alternative names, which a
//! keystore reconfiguration compares. The subject is read with a small DER walker: the certificate
//! has already been verified by rustls, and a malformed one yields `None`, never a panic.

use std::fmt;

use regex::{Captures, Regex};

/// Kafka's `ssl.principal.mapping.rules`, parsed.
#[derive(Debug, Clone)]
pub struct SslPrincipalMapper {
    rules: Vec<Rule>,
}

#[derive(Debug, Clone)]
enum Rule {
    Default,
    Pattern {
        /// The pattern as written (shown by `Display`, as Kafka's `toString`).
        source: String,
        /// The pattern anchored at both ends: Java's `Matcher.matches()`.
        whole: Regex,
        /// The pattern itself, for Java's `replaceAll`.
        pattern: Regex,
        /// The replacement as written.
        replacement_source: String,
        replacement: Vec<Piece>,
        case: Case,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Keep,
    Lower,
    Upper,
}

/// A parsed Java replacement string: literal text and group references.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(String),
    Group(usize),
}

/// Kafka's `RULE_PATTERN`: `DEFAULT`, or `RULE:pattern/replacement/[LU]`, or anything else
/// (empty, or an error unless it is the whole rule).
const RULE_PATTERN: &str = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)";

impl SslPrincipalMapper {
    /// Kafka's default: `DEFAULT` (the subject as it is).
    pub fn default_rules() -> SslPrincipalMapper {
        SslPrincipalMapper {
            rules: vec![Rule::Default],
        }
    }

    /// Parses `rules` as Kafka's `SslPrincipalMapper.fromRules` does (split on commas
    /// outside a rule's pattern and replacement, empty rules ignored); an invalid rule, a
    /// pattern the regex engine does not take or a replacement naming a group the pattern
    /// does not have is an error naming it.
    pub fn parse(rules: &str) -> Result<SslPrincipalMapper, String> {
        let splitter =
            Regex::new(&format!(r"\s*({RULE_PATTERN})\s*(,\s*|$)")).map_err(|e| e.to_string())?;
        let parser = Regex::new(&format!("^(?:{RULE_PATTERN})")).map_err(|e| e.to_string())?;
        let mut parsed = Vec::new();
        for rule in java_find_all(&splitter, rules.trim()) {
            let rule = rule.get(1).map_or("", |m| m.as_str());
            let caps = parser
                .captures(rule)
                .ok_or_else(|| format!("invalid rule: {rule}"))?;
            let end = caps.get(0).map_or(0, |m| m.end());
            if end != rule.len() {
                return Err(format!(
                    "invalid rule `{rule}`, unmatched substring `{}`",
                    &rule[end..]
                ));
            }
            if caps.get(1).is_some() {
                parsed.push(Rule::Default);
            } else if let Some(pattern) = caps.get(2) {
                let source = pattern.as_str().to_string();
                let replacement_source = caps.get(4).map_or("", |m| m.as_str()).to_string();
                let case = match caps.get(6).map(|m| m.as_str()) {
                    Some("L") => Case::Lower,
                    Some("U") => Case::Upper,
                    _ => Case::Keep,
                };
                let compile = |p: &str| {
                    Regex::new(p).map_err(|e| {
                        let e = e.to_string().replace('\n', " ");
                        format!("rule `{rule}`: pattern {source:?} does not compile: {e}")
                    })
                };
                let pattern = compile(&source)?;
                let whole = compile(&format!("^(?:{source})$"))?;
                let replacement = parse_replacement(&replacement_source, &pattern)
                    .map_err(|e| format!("rule `{rule}`: replacement: {e}"))?;
                parsed.push(Rule::Pattern {
                    source,
                    whole,
                    pattern,
                    replacement_source,
                    replacement,
                    case,
                });
            }
        }
        Ok(SslPrincipalMapper { rules: parsed })
    }

    /// The principal name of `distinguished_name` by the first rule that applies, or
    /// `None` when none does (Kafka then fails the connection's authentication).
    pub fn name(&self, distinguished_name: &str) -> Option<String> {
        self.rules.iter().find_map(|r| r.apply(distinguished_name))
    }
}

impl Default for SslPrincipalMapper {
    fn default() -> Self {
        Self::default_rules()
    }
}

impl Rule {
    fn apply(&self, dn: &str) -> Option<String> {
        match self {
            Rule::Default => Some(dn.to_string()),
            Rule::Pattern {
                whole,
                pattern,
                replacement,
                case,
                ..
            } => {
                if !whole.is_match(dn) {
                    return None;
                }
                let mut out = String::new();
                let mut last = 0;
                for caps in java_find_all(pattern, dn) {
                    let Some(m) = caps.get(0) else { continue };
                    out.push_str(&dn[last..m.start()]);
                    expand(replacement, &caps, &mut out);
                    last = m.end();
                }
                out.push_str(&dn[last..]);
                Some(match case {
                    Case::Keep => out,
                    Case::Lower => out.to_lowercase(),
                    Case::Upper => out.to_uppercase(),
                })
            }
        }
    }
}

impl fmt::Display for Rule {
    /// As Kafka's `Rule.toString` (its tests check the splitting through it).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::Default => f.write_str("DEFAULT"),
            Rule::Pattern {
                source,
                replacement_source,
                case,
                ..
            } => {
                write!(f, "RULE:{source}/{replacement_source}")?;
                match case {
                    Case::Lower => f.write_str("/L"),
                    Case::Upper => f.write_str("/U"),
                    Case::Keep => Ok(()),
                }
            }
        }
    }
}

impl fmt::Display for SslPrincipalMapper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SslPrincipalMapper(rules = [")?;
        for (i, r) in self.rules.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{r}")?;
        }
        f.write_str("])")
    }
}

/// Every match of `re` in `text` as Java's `Matcher.find()` loop finds them: the next
/// search starts where the last match ended, one character later after an empty match.
fn java_find_all<'t>(re: &Regex, text: &'t str) -> Vec<Captures<'t>> {
    let mut out = Vec::new();
    let mut from = 0;
    while from <= text.len() {
        let Some(caps) = re.captures_at(text, from) else {
            break;
        };
        let Some(m) = caps.get(0) else { break };
        from = if m.is_empty() {
            match text[m.end()..].chars().next() {
                Some(c) => m.end() + c.len_utf8(),
                None => text.len() + 1,
            }
        } else {
            m.end()
        };
        out.push(caps);
    }
    out
}

/// Kafka's `escapeLiteralBackReferences` (from Apache NiFi) and then Java's replacement
/// syntax (`$n` taking as many digits as name an existing group, `${name}`, `\x` for a
/// literal `x`), parsed once so applying a rule never fails.
fn parse_replacement(replacement: &str, pattern: &Regex) -> Result<Vec<Piece>, String> {
    let groups = pattern.captures_len() - 1;
    let escaped = escape_literal_back_references(replacement, groups);
    let chars: Vec<char> = escaped.chars().collect();
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                let c = chars
                    .get(i + 1)
                    .ok_or("character to be escaped is missing")?;
                literal.push(*c);
                i += 2;
            }
            '$' => {
                i += 1;
                let group = match chars.get(i) {
                    None => return Err("illegal group reference: group index is missing".into()),
                    Some('{') => {
                        let close = chars[i..]
                            .iter()
                            .position(|c| *c == '}')
                            .ok_or("named capturing group is missing trailing '}'")?;
                        let name: String = chars[i + 1..i + close].iter().collect();
                        i += close + 1;
                        pattern
                            .capture_names()
                            .position(|n| n == Some(name.as_str()))
                            .ok_or_else(|| format!("no group with name {{{name}}}"))?
                    }
                    Some(c) => {
                        let mut group = c.to_digit(10).ok_or("illegal group reference")? as usize;
                        if group > groups {
                            return Err(format!("no group {group}"));
                        }
                        i += 1;
                        while let Some(d) = chars.get(i).and_then(|c| c.to_digit(10)) {
                            let next = group * 10 + d as usize;
                            if next > groups {
                                break;
                            }
                            group = next;
                            i += 1;
                        }
                        group
                    }
                };
                if !literal.is_empty() {
                    pieces.push(Piece::Literal(std::mem::take(&mut literal)));
                }
                pieces.push(Piece::Group(group));
            }
            c => {
                literal.push(c);
                i += 1;
            }
        }
    }
    if !literal.is_empty() {
        pieces.push(Piece::Literal(literal));
    }
    Ok(pieces)
}

/// `$n` with more digits than groups is cut to an existing group; one naming no group at
/// all becomes the literal `\$n` (positions taken from the original string, as Kafka's).
fn escape_literal_back_references(unescaped: &str, groups: usize) -> String {
    if groups == 0 {
        return unescaped.to_string();
    }
    let back_ref = Regex::new(r"\$(\d+)").expect("a valid pattern");
    let mut value = unescaped.to_string();
    for caps in back_ref.captures_iter(unescaped) {
        let Some(num) = caps.get(1) else { continue };
        if num.as_str().starts_with('0') {
            continue;
        }
        let mut index: u128 = num.as_str().parse().unwrap_or(u128::MAX);
        while index > groups as u128 && index >= 10 {
            index /= 10;
        }
        if index > groups as u128 {
            let at = num.start() - 1;
            if at <= value.len() && value.is_char_boundary(at) {
                value.insert(at, '\\');
            }
        }
    }
    value
}

fn expand(pieces: &[Piece], caps: &Captures<'_>, out: &mut String) {
    for p in pieces {
        match p {
            Piece::Literal(s) => out.push_str(s),
            Piece::Group(g) => {
                if let Some(m) = caps.get(*g) {
                    out.push_str(m.as_str());
                }
            }
        }
    }
}

/// The subject of a DER certificate as Java's `X500Principal.getName()` (RFC 2253) prints
/// it, or `None` if the certificate does not parse.
pub fn subject_dn(certificate: &[u8]) -> Option<String> {
    let (_, subject, _) = tbs_fields(certificate)?;
    format_name(subject)
}

/// The fields of a DER certificate's `TBSCertificate` up to its subject: (serial number
/// contents, subject contents, the rest: subject public key info and what follows).
fn tbs_fields(certificate: &[u8]) -> Option<(&[u8], &[u8], Der<'_>)> {
    let mut cert = Der(certificate);
    let (_, cert_body) = cert.expect(0x30)?;
    let (_, tbs) = Der(cert_body).expect(0x30)?;
    let mut tbs = Der(tbs);
    if tbs.peek_tag() == Some(0xa0) {
        tbs.next()?; // version
    }
    let (_, serial) = tbs.expect(0x02)?;
    tbs.expect(0x30)?; // signature algorithm
    tbs.expect(0x30)?; // issuer
    tbs.expect(0x30)?; // validity
    let (_, subject) = tbs.expect(0x30)?;
    Some((serial, subject, tbs))
}

/// A DER certificate's serial number in hexadecimal (as `openssl x509 -serial` prints it,
/// without leading zero bytes), or `None` if the certificate does not parse.
pub fn serial_number(certificate: &[u8]) -> Option<String> {
    let (serial, _, _) = tbs_fields(certificate)?;
    let digits: Vec<u8> = serial.iter().copied().skip_while(|b| *b == 0).collect();
    if digits.is_empty() {
        return Some("00".to_string());
    }
    Some(digits.iter().map(|b| format!("{b:02X}")).collect())
}

/// A DER certificate's subject alternative names as Java's
/// `X509Certificate.getSubjectAlternativeNames` lists them: (GeneralName type, value), the
/// value as text for the types Java gives as strings (rfc822Name 1, dNSName 2, URI 6,
/// iPAddress 7, registeredID 8 as hex here) and hexadecimal DER otherwise; sorted; empty
/// without the extension. `None` if the certificate does not parse.
pub fn subject_alt_names(certificate: &[u8]) -> Option<Vec<(u8, String)>> {
    let (_, _, mut rest) = tbs_fields(certificate)?;
    rest.expect(0x30)?; // subject public key info
    let mut names = Vec::new();
    while !rest.is_empty() {
        let (tag, contents) = rest.next()?;
        if tag != 0xa3 {
            continue; // issuer or subject unique id
        }
        let (_, extensions) = Der(contents).expect(0x30)?;
        let mut extensions = Der(extensions);
        while !extensions.is_empty() {
            let (_, extension) = extensions.expect(0x30)?;
            let mut extension = Der(extension);
            let (_, oid) = extension.expect(0x06)?;
            if oid != [0x55, 0x1d, 0x11] {
                continue; // not 2.5.29.17
            }
            if extension.peek_tag() == Some(0x01) {
                extension.next()?; // critical
            }
            let (_, value) = extension.expect(0x04)?;
            let (_, general_names) = Der(value).expect(0x30)?;
            let mut general_names = Der(general_names);
            while !general_names.is_empty() {
                let (tag, value, encoded) = general_names.next_with_encoding()?;
                let kind = tag & 0x1f;
                let text = match kind {
                    1 | 2 | 6 => String::from_utf8_lossy(value).into_owned(),
                    7 if value.len() == 4 => {
                        std::net::Ipv4Addr::new(value[0], value[1], value[2], value[3]).to_string()
                    }
                    7 if value.len() == 16 => {
                        let octets: [u8; 16] = value.try_into().ok()?;
                        std::net::Ipv6Addr::from(octets).to_string()
                    }
                    _ => encoded.iter().map(|b| format!("{b:02x}")).collect(),
                };
                names.push((kind, text));
            }
        }
    }
    names.sort();
    names.dedup();
    Some(names)
}

/// A DER `Name` (the contents of its SEQUENCE) in RFC 2253 form: the RDNs last first,
/// joined by commas, the values of a multi-valued RDN joined by `+`.
fn format_name(name: &[u8]) -> Option<String> {
    let mut rdns = Vec::new();
    let mut seq = Der(name);
    while !seq.is_empty() {
        let (_, set) = seq.expect(0x31)?;
        let mut avas = Vec::new();
        let mut set = Der(set);
        while !set.is_empty() {
            let (_, ava) = set.expect(0x30)?;
            let mut ava = Der(ava);
            let (_, oid) = ava.expect(0x06)?;
            let (tag, value, encoded) = ava.next_with_encoding()?;
            avas.push(format_ava(oid, tag, value, encoded)?);
        }
        rdns.push(avas.join("+"));
    }
    rdns.reverse();
    Some(rdns.join(","))
}

/// RFC 2253's keywords, the only ones Java's RFC 2253 form names.
const KEYWORDS: [(&str, &str); 9] = [
    ("2.5.4.3", "CN"),
    ("2.5.4.6", "C"),
    ("2.5.4.7", "L"),
    ("2.5.4.8", "ST"),
    ("2.5.4.9", "STREET"),
    ("2.5.4.10", "O"),
    ("2.5.4.11", "OU"),
    ("0.9.2342.19200300.100.1.25", "DC"),
    ("0.9.2342.19200300.100.1.1", "UID"),
];

fn format_ava(oid: &[u8], tag: u8, value: &[u8], encoded: &[u8]) -> Option<String> {
    let dotted = oid_string(oid)?;
    let keyword = KEYWORDS.iter().find(|(o, _)| *o == dotted).map(|(_, k)| *k);
    let text = keyword.and_then(|_| der_string(tag, value));
    let mut out = format!("{}=", keyword.unwrap_or(&dotted));
    match text {
        Some(text) => out.push_str(&escape_value(&text)),
        None => {
            out.push('#');
            for b in encoded {
                out.push_str(&format!("{b:02x}"));
            }
        }
    }
    Some(out)
}

/// The string of a value of one of the types Java's RFC 2253 form prints as text
/// (UTF8String, PrintableString, T61String, IA5String, BMPString, GeneralString).
fn der_string(tag: u8, value: &[u8]) -> Option<String> {
    match tag {
        0x0c | 0x13 | 0x16 | 0x1b => Some(String::from_utf8_lossy(value).into_owned()),
        0x14 => Some(value.iter().map(|b| char::from(*b)).collect()),
        0x1e => {
            let units: Vec<u16> = value
                .chunks(2)
                .map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]))
                .collect();
            Some(String::from_utf16_lossy(&units))
        }
        _ => None,
    }
}

/// Java's escaping in `AVA.toRFC2253String`: a backslash before `,=+<>#;"\`, `\00` for a
/// NUL, and a backslash before each leading or trailing space (or carriage return).
fn escape_value(value: &str) -> String {
    let mut escaped = Vec::new();
    for c in value.chars() {
        if ",=+<>#;\"\\".contains(c) {
            escaped.push('\\');
            escaped.push(c);
        } else if c == '\0' {
            escaped.extend(['\\', '0', '0']);
        } else {
            escaped.push(c);
        }
    }
    let blank = |c: &char| *c == ' ' || *c == '\r';
    let lead = escaped.iter().take_while(|c| blank(c)).count();
    let trail = escaped.iter().rev().take_while(|c| blank(c)).count();
    let len = escaped.len();
    let mut out = String::with_capacity(len + 4);
    for (i, c) in escaped.into_iter().enumerate() {
        if i < lead || i >= len - trail {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// An OBJECT IDENTIFIER's contents as dotted decimal.
fn oid_string(oid: &[u8]) -> Option<String> {
    let mut arcs: Vec<u64> = Vec::new();
    let mut acc: u64 = 0;
    for (i, b) in oid.iter().enumerate() {
        acc = acc.checked_mul(128)?.checked_add(u64::from(b & 0x7f))?;
        if b & 0x80 == 0 {
            if arcs.is_empty() {
                let first = (acc / 40).min(2);
                arcs.push(first);
                arcs.push(acc - first * 40);
            } else {
                arcs.push(acc);
            }
            acc = 0;
        } else if i == oid.len() - 1 {
            return None;
        }
    }
    if arcs.is_empty() {
        return None;
    }
    Some(
        arcs.iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join("."),
    )
}

/// A cursor over DER TLVs (single-byte tags, definite lengths).
struct Der<'a>(&'a [u8]);

impl<'a> Der<'a> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn peek_tag(&self) -> Option<u8> {
        self.0.first().copied()
    }

    /// The next TLV: its tag, its contents and its whole encoding.
    fn next_with_encoding(&mut self) -> Option<(u8, &'a [u8], &'a [u8])> {
        let data = self.0;
        let tag = *data.first()?;
        if tag & 0x1f == 0x1f {
            return None;
        }
        let first = *data.get(1)?;
        let (len, header) = if first < 0x80 {
            (usize::from(first), 2)
        } else {
            let n = usize::from(first & 0x7f);
            if n == 0 || n > 4 {
                return None;
            }
            let bytes = data.get(2..2 + n)?;
            let len = bytes.iter().fold(0usize, |a, b| (a << 8) | usize::from(*b));
            (len, 2 + n)
        };
        let end = header.checked_add(len)?;
        let contents = data.get(header..end)?;
        let encoded = data.get(..end)?;
        self.0 = &data[end..];
        Some((tag, contents, encoded))
    }

    fn next(&mut self) -> Option<(u8, &'a [u8])> {
        self.next_with_encoding().map(|(t, c, _)| (t, c))
    }

    fn expect(&mut self, tag: u8) -> Option<(u8, &'a [u8])> {
        self.next().filter(|(t, _)| *t == tag)
    }
}
