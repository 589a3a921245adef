//! Kafka's JSON message schemas, parsed into a model the emitter walks.
//!
//! The format is summarised in `shared/kafka-schemas/README.md`; Kafka's own generator
//! (`generator/src/main/java/org/apache/kafka/message`) is the reference for its meaning.

use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::path::Path;

/// A set of versions as the schemas write them: `"3+"`, `"0-2"`, `"5"` or `"none"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Versions {
    None,
    Range { min: i16, max: Option<i16> },
}

impl Versions {
    pub fn parse(s: &str) -> Result<Versions> {
        let s = s.trim();
        if s == "none" {
            return Ok(Versions::None);
        }
        if let Some(min) = s.strip_suffix('+') {
            return Ok(Versions::Range {
                min: min.parse().with_context(|| format!("bad versions {s:?}"))?,
                max: None,
            });
        }
        if let Some((a, b)) = s.split_once('-') {
            return Ok(Versions::Range {
                min: a.parse().with_context(|| format!("bad versions {s:?}"))?,
                max: Some(b.parse().with_context(|| format!("bad versions {s:?}"))?),
            });
        }
        let v: i16 = s.parse().with_context(|| format!("bad versions {s:?}"))?;
        Ok(Versions::Range {
            min: v,
            max: Some(v),
        })
    }

    /// Intersection with another set.
    pub fn and(&self, other: &Versions) -> Versions {
        match (*self, *other) {
            (Versions::Range { min: a, max: am }, Versions::Range { min: b, max: bm }) => {
                let min = a.max(b);
                let max = match (am, bm) {
                    (Some(x), Some(y)) => Some(x.min(y)),
                    (x, None) => x,
                    (None, y) => y,
                };
                if max.is_some_and(|m| m < min) {
                    Versions::None
                } else {
                    Versions::Range { min, max }
                }
            }
            _ => Versions::None,
        }
    }

    /// A Rust boolean expression over `version`, given the versions the code can be called
    /// with (`within`); `None` when it is always true there.
    pub fn condition(&self, within: &Versions) -> Option<String> {
        let (wmin, wmax) = match *within {
            Versions::None => return Some("false".into()),
            Versions::Range { min, max } => (min, max.unwrap_or(i16::MAX)),
        };
        match self.and(within) {
            Versions::None => Some("false".into()),
            Versions::Range { min, max } => {
                let max = max.unwrap_or(i16::MAX);
                match (min <= wmin, max >= wmax) {
                    (true, true) => None,
                    (false, true) => Some(format!("version >= {min}")),
                    (true, false) => Some(format!("version <= {max}")),
                    (false, false) if min == max => Some(format!("version == {min}")),
                    (false, false) => Some(format!("({min}..={max}).contains(&version)")),
                }
            }
        }
    }

    pub fn min(&self) -> Option<i16> {
        match *self {
            Versions::None => None,
            Versions::Range { min, .. } => Some(min),
        }
    }

    pub fn max(&self) -> Option<i16> {
        match *self {
            Versions::None => None,
            Versions::Range { max, .. } => max,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Type {
    Bool,
    Int8,
    Int16,
    Uint16,
    Int32,
    Uint32,
    Int64,
    Float64,
    Uuid,
    String,
    Bytes,
    Records,
    Struct(String),
    Array(Box<Type>),
}

impl Type {
    fn parse(s: &str) -> Result<Type> {
        Ok(match s {
            "bool" => Type::Bool,
            "int8" => Type::Int8,
            "int16" => Type::Int16,
            "uint16" => Type::Uint16,
            "int32" => Type::Int32,
            "uint32" => Type::Uint32,
            "int64" => Type::Int64,
            "float64" => Type::Float64,
            "uuid" => Type::Uuid,
            "string" => Type::String,
            "bytes" => Type::Bytes,
            "records" => Type::Records,
            _ if s.starts_with("[]") => Type::Array(Box::new(Type::parse(&s[2..])?)),
            _ if s.chars().next().is_some_and(|c| c.is_ascii_uppercase()) => {
                Type::Struct(s.to_string())
            }
            _ => bail!("unknown type {s:?}"),
        })
    }
}

#[derive(Debug, Clone)]
pub struct Field {
    pub name: String,
    pub ty: Type,
    pub versions: Versions,
    pub nullable: Versions,
    pub tagged: Versions,
    pub tag: Option<u32>,
    pub default: Option<String>,
    /// The default is JSON null, not the string "null". Kafka's generator then reads the
    /// default as "" and, in a tagged field, writes a null value explicitly (tag, size 1,
    /// varint 0) instead of leaving the tag out, as it does for `"default": "null"`.
    pub null_default_written: bool,
    pub ignorable: bool,
    /// A field-level override of the message's flexible versions (RequestHeader.ClientId).
    pub flexible: Option<Versions>,
    pub about: String,
}

#[derive(Debug, Clone)]
pub struct Struct {
    pub name: String,
    pub versions: Versions,
    pub fields: Vec<Field>,
}

#[derive(Debug, Clone)]
pub struct Schema {
    pub kind: String,
    pub name: String,
    pub api_key: Option<i16>,
    pub valid: Versions,
    pub flexible: Versions,
    pub listeners: Vec<String>,
    pub latest_unstable: bool,
    /// The top-level struct first, then every nested and common struct.
    pub structs: Vec<Struct>,
    pub file: String,
}

/// Strips `//` line comments (the schemas never put `//` inside strings).
fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn load(path: &Path) -> Result<Schema> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {path:?}"))?;
    let json: Value = serde_json::from_str(&strip_comments(&text))
        .with_context(|| format!("parsing {path:?}"))?;
    parse_schema(
        &json,
        path.file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into(),
    )
    .with_context(|| format!("in schema {path:?}"))
}

fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn parse_schema(v: &Value, file: String) -> Result<Schema> {
    let name = str_field(v, "name").context("missing name")?.to_string();
    let valid = Versions::parse(str_field(v, "validVersions").context("missing validVersions")?)?;
    let flexible = Versions::parse(str_field(v, "flexibleVersions").unwrap_or("none"))?;
    let api_key = v
        .get("apiKey")
        .and_then(Value::as_i64)
        .map(i16::try_from)
        .transpose()?;
    let listeners = v
        .get("listeners")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let mut structs = Vec::new();
    let fields = parse_fields(v.get("fields"), &mut structs)?;
    structs.insert(
        0,
        Struct {
            name: name.clone(),
            versions: valid,
            fields,
        },
    );
    if let Some(common) = v.get("commonStructs").and_then(Value::as_array) {
        for c in common {
            let cname = str_field(c, "name").context("common struct without name")?;
            let versions = Versions::parse(str_field(c, "versions").unwrap_or("0+"))?;
            let fields = parse_fields(c.get("fields"), &mut structs)?;
            structs.push(Struct {
                name: cname.to_string(),
                versions,
                fields,
            });
        }
    }
    Ok(Schema {
        kind: str_field(v, "type").context("missing type")?.to_string(),
        name,
        api_key,
        valid,
        flexible,
        listeners,
        latest_unstable: v
            .get("latestVersionUnstable")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        structs,
        file,
    })
}

fn parse_fields(v: Option<&Value>, structs: &mut Vec<Struct>) -> Result<Vec<Field>> {
    let Some(arr) = v.and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for f in arr {
        let name = str_field(f, "name")
            .context("field without name")?
            .to_string();
        let ty = Type::parse(str_field(f, "type").context("field without type")?)?;
        let tagged = Versions::parse(str_field(f, "taggedVersions").unwrap_or("none"))?;
        // As Kafka's FieldSpec: a tagged field without `versions` exists in its tagged versions.
        let versions = match str_field(f, "versions") {
            Some(v) => Versions::parse(v)?,
            None if tagged != Versions::None => tagged,
            None => bail!("field {name} has neither versions nor taggedVersions"),
        };
        if f.get("fields").is_some() {
            let sname = match &ty {
                Type::Struct(n) => n.clone(),
                Type::Array(inner) => match inner.as_ref() {
                    Type::Struct(n) => n.clone(),
                    other => bail!("field {name} has fields but type {other:?}"),
                },
                other => bail!("field {name} has fields but type {other:?}"),
            };
            let fields = parse_fields(f.get("fields"), structs)?;
            structs.push(Struct {
                name: sname,
                versions,
                fields,
            });
        }
        let default = match f.get("default") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Bool(b)) => Some(b.to_string()),
            Some(Value::Number(n)) => Some(n.to_string()),
            // The coordinator schemas write a nullable field's null default as JSON null.
            Some(Value::Null) => Some("null".into()),
            Some(other) => bail!("field {name}: odd default {other}"),
        };
        out.push(Field {
            name,
            ty,
            versions,
            nullable: Versions::parse(str_field(f, "nullableVersions").unwrap_or("none"))?,
            tagged,
            tag: f
                .get("tag")
                .and_then(Value::as_u64)
                .map(u32::try_from)
                .transpose()?,
            default,
            null_default_written: matches!(f.get("default"), Some(Value::Null)),
            ignorable: f.get("ignorable").and_then(Value::as_bool).unwrap_or(false),
            flexible: str_field(f, "flexibleVersions")
                .map(Versions::parse)
                .transpose()?,
            about: str_field(f, "about").unwrap_or("").to_string(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_conditions() {
        let all = Versions::parse("0-13").unwrap();
        assert_eq!(Versions::parse("0+").unwrap().condition(&all), None);
        assert_eq!(
            Versions::parse("3+").unwrap().condition(&all).as_deref(),
            Some("version >= 3")
        );
        assert_eq!(
            Versions::parse("0-2").unwrap().condition(&all).as_deref(),
            Some("version <= 2")
        );
        assert_eq!(
            Versions::parse("4-6").unwrap().condition(&all).as_deref(),
            Some("(4..=6).contains(&version)")
        );
        assert_eq!(
            Versions::parse("none").unwrap().condition(&all).as_deref(),
            Some("false")
        );
        let upper = Versions::parse("3-13").unwrap();
        assert_eq!(Versions::parse("0+").unwrap().condition(&upper), None);
    }
}
