//! Java `.properties` files, the format Kafka's `server.properties` and `meta.properties`
//! use: `key=value`, `key:value` or `key value`; `#` and `!` comment lines; a trailing `\`
//! continues a line; `\t`, `\n`, `\uXXXX` and escaped separators. A later duplicate key
//! wins, as in Java.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Parsed properties, with where each came from for error messages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Properties {
    values: BTreeMap<String, String>,
    /// The file they were read from; `None` for flags and built-in defaults.
    source: Option<PathBuf>,
    /// What messages name instead of the file, when values were layered over it (a live
    /// node's dynamic configs).
    described_as: Option<String>,
}

impl Properties {
    pub fn new() -> Self {
        Properties::default()
    }

    /// Reads and parses `path`.
    pub fn load(path: &Path) -> anyhow::Result<Properties> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        let mut props = Properties::parse(&text);
        props.source = Some(path.to_path_buf());
        Ok(props)
    }

    pub fn parse(text: &str) -> Properties {
        let mut values = BTreeMap::new();
        let mut logical = String::new();
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            let trimmed = line.trim_start();
            if logical.is_empty() && (trimmed.is_empty() || trimmed.starts_with(['#', '!'])) {
                continue;
            }
            logical.push_str(trimmed);
            if ends_with_continuation(&logical) {
                logical.pop();
                if lines.clone().next().is_some() {
                    continue;
                }
            }
            let (key, value) = split_entry(&logical);
            values.insert(unescape(&key), unescape(&value));
            logical.clear();
        }
        Properties {
            values,
            source: None,
            described_as: None,
        }
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.values.insert(key.into(), value.into());
    }

    /// Every key and value, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Where a key's value came from, for "bad value ... in <source>" messages.
    pub fn source(&self) -> String {
        if let Some(d) = &self.described_as {
            return d.clone();
        }
        match &self.source {
            Some(p) => p.display().to_string(),
            None => "the command line".to_string(),
        }
    }

    /// These properties with `overrides` set over them, named `described_as` in messages.
    pub fn layered(&self, overrides: &BTreeMap<String, String>, described_as: String) -> Self {
        let mut layered = self.clone();
        layered.values.extend(overrides.clone());
        layered.described_as = Some(described_as);
        layered
    }

    /// Writes `key=value` lines (sorted, escaped) with a leading comment, as Java's
    /// `Properties.store` does.
    pub fn to_text(&self, comment: &str) -> String {
        let mut out = format!("#{comment}\n");
        for (k, v) in &self.values {
            out.push_str(&escape(k, true));
            out.push('=');
            out.push_str(&escape(v, false));
            out.push('\n');
        }
        out
    }
}

/// Whether the line ends in an odd number of backslashes (an escaped line end).
fn ends_with_continuation(line: &str) -> bool {
    line.chars().rev().take_while(|c| *c == '\\').count() % 2 == 1
}

/// Splits at the first unescaped `=`, `:` or whitespace; the value's leading whitespace and
/// one separator are dropped.
fn split_entry(line: &str) -> (String, String) {
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    let mut key = String::new();
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && i + 1 < chars.len() {
            key.push(c);
            key.push(chars[i + 1]);
            i += 2;
            continue;
        }
        if c == '=' || c == ':' || c.is_whitespace() {
            break;
        }
        key.push(c);
        i += 1;
    }
    while i < chars.len() && chars[i].is_whitespace() {
        i += 1;
    }
    if i < chars.len() && (chars[i] == '=' || chars[i] == ':') {
        i += 1;
    }
    while i < chars.len() && chars[i].is_whitespace() {
        i += 1;
    }
    (key, chars[i..].iter().collect())
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\u{c}'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(ch) => out.push(ch),
                    None => {
                        out.push_str("\\u");
                        out.push_str(&hex);
                    }
                }
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

fn escape(s: &str, is_key: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, c) in s.chars().enumerate() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '=' | ':' | '#' | '!' => {
                out.push('\\');
                out.push(c);
            }
            ' ' if is_key || i == 0 => out.push_str("\\ "),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_java_properties() {
        let p = Properties::parse(
            "# comment\n! also\nnode.id=1\nprocess.roles : controller\nlisteners CONTROLLER://h:9093\n\
             long=a,\\\n   b\nesc=a\\=b\\u0041\nempty=\n",
        );
        assert_eq!(p.get("node.id"), Some("1"));
        assert_eq!(p.get("process.roles"), Some("controller"));
        assert_eq!(p.get("listeners"), Some("CONTROLLER://h:9093"));
        assert_eq!(p.get("long"), Some("a,b"));
        assert_eq!(p.get("esc"), Some("a=bA"));
        assert_eq!(p.get("empty"), Some(""));
        assert_eq!(p.get("comment"), None);
    }

    #[test]
    fn round_trips() {
        let mut p = Properties::new();
        p.set("cluster.id", "AbC-_1");
        p.set("weird key", "x=y:z #");
        let back = Properties::parse(&p.to_text("written"));
        assert_eq!(back.get("cluster.id"), Some("AbC-_1"));
        assert_eq!(back.get("weird key"), Some("x=y:z #"));
    }

    #[test]
    fn later_duplicates_win() {
        let p = Properties::parse("a=1\na=2\n");
        assert_eq!(p.get("a"), Some("2"));
    }
}
