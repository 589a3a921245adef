//! Turns a parsed schema into Rust: one module per schema holding a struct per message and
//! nested struct, with version-aware encode, decode, minimum-size and (behind the `testing`
//! feature) sample functions.
//!
//! The wire rules follow Kafka's own generator (MessageDataGenerator): fields absent from a
//! version keep their default and may only be non-default when `ignorable`; nullable structs
//! carry a marker byte in their nullable versions; tagged fields are written only when they
//! differ from their default; compact encodings in flexible versions unless a field
//! overrides them.

use super::schema::{Field, Schema, Struct, Type, Versions};
use anyhow::{bail, Result};
use std::fmt::Write;

/// The response fields counted as errors: Kafka's `errorCounts()` counts each
/// `ErrorCode` (top level and per item) and AddPartitionsToTxn's `PartitionErrorCode`, not
/// CreateTopics' `TopicConfigErrorCode` nor ShareFetch's `AcknowledgeErrorCode`.
const COUNTED_ERROR_FIELDS: &[&str] = &["ErrorCode", "PartitionErrorCode"];

/// Whether a value of type `ty` holds a counted error field, itself or nested (`depth`
/// stops a self-referencing schema).
fn carries_errors(schema: &Schema, ty: &Type, depth: usize) -> bool {
    match ty {
        Type::Array(inner) => carries_errors(schema, inner, depth),
        Type::Struct(name) if depth < 16 => schema
            .structs
            .iter()
            .find(|s| &s.name == name)
            .is_some_and(|s| {
                s.fields.iter().any(|f| {
                    (f.ty == Type::Int16 && COUNTED_ERROR_FIELDS.contains(&f.name.as_str()))
                        || carries_errors(schema, &f.ty, depth + 1)
                })
            }),
        _ => false,
    }
}

/// Rust's reserved words that schema field names can collide with.
const KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
];

/// `ThrottleTimeMs` → `throttle_time_ms`, `ISRNodes` → `isr_nodes`.
pub fn snake(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next_lower)
            {
                out.push('_');
            }
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

pub fn field_ident(name: &str) -> String {
    let s = snake(name);
    if KEYWORDS.contains(&s.as_str()) {
        format!("r#{s}")
    } else {
        s
    }
}

struct Ctx<'a> {
    schema: &'a Schema,
    /// Versions the current struct's code can be called with.
    within: Versions,
}

impl Ctx<'_> {
    fn cond(&self, v: &Versions) -> Option<String> {
        v.condition(&self.within)
    }

    fn ever(&self, v: &Versions) -> bool {
        self.cond(v).as_deref() != Some("false")
    }

    fn struct_named(&self, name: &str) -> Option<&Struct> {
        self.schema.structs.iter().find(|s| s.name == name)
    }
}

/// Wraps `body` in `if cond { .. }`, or not at all when always true, or drops it when never.
fn guarded(cond: &Option<String>, body: &str) -> String {
    match cond.as_deref() {
        None => body.to_string(),
        Some("false") => String::new(),
        Some(c) => format!("if {c} {{\n{body}}}\n"),
    }
}

fn base_type(ty: &Type) -> String {
    match ty {
        Type::Bool => "bool".into(),
        Type::Int8 => "i8".into(),
        Type::Int16 => "i16".into(),
        Type::Uint16 => "u16".into(),
        Type::Int32 => "i32".into(),
        Type::Uint32 => "u32".into(),
        Type::Int64 => "i64".into(),
        Type::Float64 => "f64".into(),
        Type::Uuid => "c::Uuid".into(),
        Type::String => "String".into(),
        Type::Bytes | Type::Records => "Bytes".into(),
        Type::Struct(n) => n.clone(),
        Type::Array(inner) => format!("Vec<{}>", base_type(inner)),
    }
}

fn is_option(f: &Field) -> bool {
    f.nullable != Versions::None
}

fn rust_type(f: &Field) -> String {
    if is_option(f) {
        format!("Option<{}>", base_type(&f.ty))
    } else {
        base_type(&f.ty)
    }
}

fn base_default(f: &Field) -> Result<String> {
    let d = f.default.as_deref();
    Ok(match &f.ty {
        Type::Bool => match d.map(str::to_ascii_lowercase).as_deref() {
            None | Some("false") => "false".into(),
            Some("true") => "true".into(),
            Some(o) => bail!("field {}: bad bool default {o}", f.name),
        },
        Type::Int8 | Type::Int16 | Type::Uint16 | Type::Int32 | Type::Uint32 | Type::Int64 => {
            match d {
                None => "0".into(),
                Some(s) if s.starts_with("0x") || s.parse::<i64>().is_ok() => s.to_string(),
                Some(o) => bail!("field {}: bad integer default {o}", f.name),
            }
        }
        Type::Float64 => match d {
            None => "0.0".into(),
            Some(s) => format!("{:?}", s.parse::<f64>()?),
        },
        Type::Uuid => "c::Uuid::ZERO".into(),
        Type::String => match d {
            None | Some("") | Some("null") => "String::new()".into(),
            Some(s) => format!("String::from({s:?})"),
        },
        Type::Bytes | Type::Records => "Bytes::new()".into(),
        Type::Array(_) => "Vec::new()".into(),
        Type::Struct(n) => format!("{n}::default()"),
    })
}

fn default_expr(f: &Field) -> Result<String> {
    if is_option(f) {
        if f.default.as_deref() == Some("null") || f.ty == Type::Records {
            return Ok("None".into());
        }
        return Ok(format!("Some({})", base_default(f)?));
    }
    if f.default.as_deref() == Some("null") {
        bail!("field {} defaults to null but is never nullable", f.name);
    }
    base_default(f)
}

/// Rust expression: is `expr` (a place of the field's type) different from the default?
fn differs_from_default(f: &Field, expr: &str) -> Result<String> {
    let d = default_expr(f)?;
    Ok(match (d.as_str(), &f.ty) {
        ("None", _) => format!("{expr}.is_some()"),
        ("Vec::new()", _) => format!("!{expr}.is_empty()"),
        ("Bytes::new()", _) => format!("!{expr}.is_empty()"),
        ("String::new()", _) => format!("!{expr}.is_empty()"),
        (_, Type::Float64) => format!("{expr}.to_bits() != ({d}f64).to_bits()"),
        _ => format!("{expr} != {d}"),
    })
}

fn label(s: &Struct, f: &Field) -> String {
    format!("\"{}.{}\"", s.name, f.name)
}

impl Ctx<'_> {
    /// `compact` for a field: flexible versions unless the field overrides them.
    fn compact(&self, f: &Field) -> String {
        match &f.flexible {
            Some(v) => self.cond(v).unwrap_or_else(|| "true".into()),
            None => "flexible".into(),
        }
    }

    /// Statements writing a non-null value `x` (a reference) of type `ty`.
    fn write_base(&self, ty: &Type, x: &str, lbl: &str, compact: &str) -> Result<String> {
        Ok(match ty {
            Type::Bool => format!("e.put_bool(*{x});\n"),
            Type::Int8 => format!("e.put_i8(*{x});\n"),
            Type::Int16 => format!("e.put_i16(*{x});\n"),
            Type::Uint16 => format!("e.put_u16(*{x});\n"),
            Type::Int32 => format!("e.put_i32(*{x});\n"),
            Type::Uint32 => format!("e.put_u32(*{x});\n"),
            Type::Int64 => format!("e.put_i64(*{x});\n"),
            Type::Float64 => format!("e.put_f64(*{x});\n"),
            Type::Uuid => format!("e.put_uuid({x});\n"),
            Type::String => format!("e.put_string(Some({x}), {lbl}, {compact})?;\n"),
            Type::Bytes | Type::Records => format!("e.put_bytes(Some({x}), {lbl}, {compact})?;\n"),
            Type::Struct(_) => format!("{x}.write_to(e, version)?;\n"),
            Type::Array(inner) => {
                let el = self.write_base(inner, "el", lbl, compact)?;
                format!(
                    "e.put_length(Some({x}.len()), {lbl}, {compact}, false)?;\nfor el in {x} {{\n{el}}}\n"
                )
            }
        })
    }

    /// Statements writing field `f` of struct `s` from `self.<ident>`.
    /// In a tagged field (`tagged`) a nullable struct's marker is Kafka's varint: 1 present,
    /// 0 null (its reader takes any value ≤ 0 as null); elsewhere a byte, 1 or -1.
    fn write_field(&self, s: &Struct, f: &Field, tagged: bool) -> Result<String> {
        let id = field_ident(&f.name);
        let lbl = label(s, f);
        let compact = self.compact(f);
        let x = "field";
        let bind = format!("let field = &self.{id};\n");
        if !is_option(f) {
            return Ok(format!(
                "{{\n{bind}{}}}\n",
                self.write_base(&f.ty, x, &lbl, &compact)?
            ));
        }
        let null_cond = self.cond(&f.nullable);
        let present = self.write_base(&f.ty, "v", &lbl, &compact)?;
        let (present, null_write) = match &f.ty {
            Type::Struct(_) if tagged => (
                format!("e.put_unsigned_varint(1);\n{present}"),
                "e.put_unsigned_varint(0);\n".to_string(),
            ),
            Type::Struct(_) => (
                format!("e.put_i8(1);\n{present}"),
                "e.put_i8(-1);\n".to_string(),
            ),
            Type::String => (
                present,
                format!("e.put_length(None, {lbl}, {compact}, true)?;\n"),
            ),
            _ => (
                present,
                format!("e.put_length(None, {lbl}, {compact}, false)?;\n"),
            ),
        };
        let null_err =
            format!("return Err(c::EncodeError::NullNotAllowed {{ field: {lbl}, version }});\n");
        Ok(match null_cond.as_deref() {
            None => format!(
                "match &self.{id} {{\nSome(v) => {{\n{present}}}\nNone => {{\n{null_write}}}\n}}\n"
            ),
            Some(cond) => {
                // Structs carry the marker byte only in their nullable versions.
                let plain = self.write_base(&f.ty, "v", &lbl, &compact)?;
                format!(
                    "match &self.{id} {{\nSome(v) => {{\nif {cond} {{\n{present}}} else {{\n{plain}}}\n}}\nNone => {{\nif {cond} {{\n{null_write}}} else {{\n{null_err}}}\n}}\n}}\n"
                )
            }
        })
    }

    /// An expression reading a non-null value of type `ty` from `b`.
    fn read_base(&self, ty: &Type, lbl: &str, compact: &str) -> Result<String> {
        Ok(match ty {
            Type::Bool => format!("c::read_bool(b, {lbl})?"),
            Type::Int8 => format!("c::read_i8(b, {lbl})?"),
            Type::Int16 => format!("c::read_i16(b, {lbl})?"),
            Type::Uint16 => format!("c::read_u16(b, {lbl})?"),
            Type::Int32 => format!("c::read_i32(b, {lbl})?"),
            Type::Uint32 => format!("c::read_u32(b, {lbl})?"),
            Type::Int64 => format!("c::read_i64(b, {lbl})?"),
            Type::Float64 => format!("c::read_f64(b, {lbl})?"),
            Type::Uuid => format!("c::read_uuid(b, {lbl})?"),
            Type::String => format!("c::read_string(b, {lbl}, {compact})?"),
            Type::Bytes | Type::Records => format!("c::read_bytes(b, {lbl}, {compact})?"),
            Type::Struct(n) => format!("{n}::read_from(b, version)?"),
            Type::Array(inner) => {
                let el = self.read_base(inner, lbl, compact)?;
                let min = self.min_size_expr(inner, compact)?;
                format!("c::read_array(b, {lbl}, {compact}, {min}, |b| Ok({el}))?")
            }
        })
    }

    fn read_nullable(&self, ty: &Type, lbl: &str, compact: &str, tagged: bool) -> Result<String> {
        Ok(match ty {
            Type::Struct(n) if tagged => format!(
                "if c::read_tagged_struct_present(b, {lbl})? {{ Some({n}::read_from(b, version)?) }} else {{ None }}"
            ),
            Type::String => format!("c::read_nullable_string(b, {lbl}, {compact})?"),
            Type::Bytes | Type::Records => format!("c::read_nullable_bytes(b, {lbl}, {compact})?"),
            Type::Struct(n) => format!(
                "if c::read_struct_present(b, {lbl})? {{ Some({n}::read_from(b, version)?) }} else {{ None }}"
            ),
            Type::Array(inner) => {
                let el = self.read_base(inner, lbl, compact)?;
                let min = self.min_size_expr(inner, compact)?;
                format!("c::read_nullable_array(b, {lbl}, {compact}, {min}, |b| Ok({el}))?")
            }
            other => bail!("type {other:?} cannot be nullable"),
        })
    }

    /// An expression reading field `f` (of its Rust type) from `b`.
    /// `tagged`: read from a tagged field's payload (see [`Ctx::write_field`]).
    fn read_field(&self, s: &Struct, f: &Field, tagged: bool) -> Result<String> {
        let lbl = label(s, f);
        let compact = self.compact(f);
        if !is_option(f) {
            return self.read_base(&f.ty, &lbl, &compact);
        }
        let nullable = self.read_nullable(&f.ty, &lbl, &compact, tagged)?;
        let plain = self.read_base(&f.ty, &lbl, &compact)?;
        Ok(match self.cond(&f.nullable).as_deref() {
            None => nullable,
            Some(c) => format!("if {c} {{ {nullable} }} else {{ Some({plain}) }}"),
        })
    }

    /// The fewest bytes an element of type `ty` can take on the wire.
    fn min_size_expr(&self, ty: &Type, compact: &str) -> Result<String> {
        Ok(match ty {
            Type::Bool | Type::Int8 => "1".into(),
            Type::Int16 | Type::Uint16 => "2".into(),
            Type::Int32 | Type::Uint32 => "4".into(),
            Type::Int64 | Type::Float64 => "8".into(),
            Type::Uuid => "16".into(),
            Type::String => format!("if {compact} {{ 1 }} else {{ 2 }}"),
            Type::Bytes | Type::Records | Type::Array(_) => {
                format!("if {compact} {{ 1 }} else {{ 4 }}")
            }
            Type::Struct(n) => format!("{n}::min_size(version)"),
        })
    }

    /// An expression producing a random non-null value of type `ty`.
    fn sample_base(&self, ty: &Type) -> String {
        match ty {
            Type::Bool => "rng.bool()".into(),
            Type::Int8 => "rng.next_u64() as i8".into(),
            Type::Int16 => "rng.next_u64() as i16".into(),
            Type::Uint16 => "rng.next_u64() as u16".into(),
            Type::Int32 => "rng.next_u64() as i32".into(),
            Type::Uint32 => "rng.next_u64() as u32".into(),
            Type::Int64 => "rng.next_u64() as i64".into(),
            Type::Float64 => "rng.f64()".into(),
            Type::Uuid => "rng.uuid()".into(),
            Type::String => "rng.string()".into(),
            Type::Bytes | Type::Records => "rng.bytes()".into(),
            Type::Struct(n) => format!("{n}::sample(rng, version)"),
            Type::Array(inner) => {
                format!("rng.vec(|rng| {})", self.sample_base(inner))
            }
        }
    }

    fn sample_field(&self, f: &Field) -> String {
        let base = self.sample_base(&f.ty);
        if !is_option(f) {
            return base;
        }
        match self.cond(&f.nullable).as_deref() {
            Some("false") => format!("Some({base})"),
            None => format!("if rng.chance(4) {{ None }} else {{ Some({base}) }}"),
            Some(c) => format!("if ({c}) && rng.chance(4) {{ None }} else {{ Some({base}) }}"),
        }
    }

    fn min_size_field(&self, f: &Field) -> Result<String> {
        let compact = self.compact(f);
        if is_option(f) {
            if let Type::Struct(_) = f.ty {
                let inner = self.min_size_expr(&f.ty, &compact)?;
                return Ok(match self.cond(&f.nullable).as_deref() {
                    None => "1".into(),
                    Some("false") => inner,
                    Some(c) => format!("if {c} {{ 1 }} else {{ {inner} }}"),
                });
            }
        }
        self.min_size_expr(&f.ty, &compact)
    }
}

/// Whether `word` appears in `code` as a variable (not a field access or part of a name).
fn uses_word(code: &str, word: &str) -> bool {
    let bytes = code.as_bytes();
    code.match_indices(word).any(|(i, _)| {
        let before = if i == 0 { b' ' } else { bytes[i - 1] };
        let after = bytes.get(i + word.len()).copied().unwrap_or(b' ');
        let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
        !ident(before) && before != b'.' && before != b'#' && !ident(after)
    })
}

/// Declares `flexible` when the body uses it, and names `version` `_version` when it doesn't.
fn finish_fn(signature: &str, flexible_expr: &str, body: &str) -> String {
    let uses_flexible = uses_word(body, "flexible");
    let prelude = if uses_flexible {
        format!("let flexible = {flexible_expr};\n")
    } else {
        String::new()
    };
    let full = format!("{prelude}{body}");
    let sig = if uses_word(&full, "version") {
        signature.to_string()
    } else {
        signature.replace("version: i16", "_version: i16")
    };
    format!("{sig} {{\n{full}}}\n")
}

fn emit_struct(schema: &Schema, s: &Struct, out: &mut String) -> Result<()> {
    let within = s.versions.and(&schema.valid);
    let ctx = Ctx { schema, within };
    let has_flexible = ctx.ever(&schema.flexible);
    let flexible_expr = ctx.cond(&schema.flexible).unwrap_or_else(|| "true".into());
    let mut tagged: Vec<&Field> = s.fields.iter().filter(|f| f.tag.is_some()).collect();
    tagged.sort_by_key(|f| f.tag);
    for f in &tagged {
        if f.versions != f.tagged {
            bail!(
                "{}.{}: tagged in {:?} but present in {:?}; mixed fields are not supported",
                s.name,
                f.name,
                f.tagged,
                f.versions
            );
        }
    }

    // The type.
    writeln!(
        out,
        "/// `{}` of `{}` (versions {}).",
        s.name,
        schema.name,
        vstr(&within)
    )?;
    writeln!(out, "#[derive(Debug, Clone, PartialEq)]")?;
    writeln!(out, "pub struct {} {{", s.name)?;
    for f in &s.fields {
        let about = f.about.trim();
        if !about.is_empty() {
            for line in about.lines() {
                writeln!(out, "    /// {}", line.trim())?;
            }
            writeln!(out, "    ///")?;
        }
        let tag = f.tag.map(|t| format!(", tag {t}")).unwrap_or_default();
        writeln!(out, "    /// Versions {}{tag}.", vstr(&f.versions))?;
        writeln!(out, "    pub {}: {},", field_ident(&f.name), rust_type(f))?;
    }
    if has_flexible {
        writeln!(
            out,
            "    /// Tagged fields this schema does not know, kept to be re-encoded."
        )?;
        writeln!(
            out,
            "    pub unknown_tagged_fields: Vec<c::RawTaggedField>,"
        )?;
    }
    writeln!(out, "}}\n")?;

    // Default.
    writeln!(out, "impl Default for {} {{", s.name)?;
    writeln!(out, "    fn default() -> Self {{")?;
    writeln!(out, "        {} {{", s.name)?;
    for f in &s.fields {
        writeln!(
            out,
            "            {}: {},",
            field_ident(&f.name),
            default_expr(f)?
        )?;
    }
    if has_flexible {
        writeln!(out, "            unknown_tagged_fields: Vec::new(),")?;
    }
    writeln!(out, "        }}\n    }}\n}}\n")?;

    writeln!(out, "impl {} {{", s.name)?;

    // write_to
    let mut body = String::new();
    for f in &s.fields {
        let id = field_ident(&f.name);
        let lbl = label(s, f);
        let not_in_version = if f.ignorable {
            String::new()
        } else {
            format!(
                "if {} {{\nreturn Err(c::EncodeError::FieldNotInVersion {{ field: {lbl}, version }});\n}}\n",
                differs_from_default(f, &format!("self.{id}"))?
            )
        };
        if f.tag.is_some() {
            match ctx.cond(&f.tagged).as_deref() {
                None => {}
                Some("false") => body.push_str(&not_in_version),
                Some(c) if !not_in_version.is_empty() => {
                    body.push_str(&format!("if !({c}) {{\n{not_in_version}}}\n"))
                }
                Some(_) => {}
            }
            continue;
        }
        let write = ctx.write_field(s, f, false)?;
        match ctx.cond(&f.versions).as_deref() {
            None => body.push_str(&write),
            Some("false") => body.push_str(&not_in_version),
            Some(c) if not_in_version.is_empty() => {
                body.push_str(&format!("if {c} {{\n{write}}}\n"))
            }
            Some(c) => body.push_str(&format!("if {c} {{\n{write}}} else {not_in_version}")),
        }
    }
    if has_flexible {
        let mut section = String::new();
        if tagged.iter().any(|f| ctx.ever(&f.tagged)) {
            section.push_str("let mut known: Vec<(u32, c::Encoder)> = Vec::new();\n");
            for f in &tagged {
                let id = field_ident(&f.name);
                // A JSON-null default: Kafka writes a null value explicitly (tag, size 1,
                // varint 0). It leaves out a value equal to its in-memory default (an empty
                // array, a default struct), which it reads back as that value where kraftd's
                // default is None; kraftd writes those too, so that what it writes reads back
                // the same here and in Kafka.
                let differs = if f.null_default_written && is_option(f) {
                    "true".to_string()
                } else {
                    differs_from_default(f, &format!("self.{id}"))?
                };
                let cond = match ctx.cond(&f.tagged) {
                    Some(c) if c == "false" => continue,
                    Some(c) => format!("({c}) && {differs}"),
                    None => differs,
                };
                let write = ctx.write_field(s, f, true)?;
                section.push_str(&format!(
                    "if {cond} {{\nlet mut p = c::Encoder::new();\n{{\nlet e = &mut p;\n{write}}}\nknown.push(({}, p));\n}}\n",
                    f.tag.unwrap_or_default()
                ));
            }
            section.push_str("c::put_tagged_section(e, known, &self.unknown_tagged_fields);\n");
        } else {
            section
                .push_str("c::put_tagged_section(e, Vec::new(), &self.unknown_tagged_fields);\n");
        }
        body.push_str(&guarded(&ctx.cond(&schema.flexible), &section));
    }
    body.push_str("Ok(())\n");
    out.push_str(&finish_fn(
        "fn write_to(&self, e: &mut c::Encoder, version: i16) -> Result<(), c::EncodeError>",
        &flexible_expr,
        &body,
    ));

    // read_from
    let mut body = String::from("let mut s = Self::default();\n");
    let mut reads = String::new();
    for f in &s.fields {
        if f.tag.is_some() {
            continue;
        }
        let read = format!(
            "s.{} = {};\n",
            field_ident(&f.name),
            ctx.read_field(s, f, false)?
        );
        reads.push_str(&guarded(&ctx.cond(&f.versions), &read));
    }
    body.push_str(&reads);
    if has_flexible {
        let mut arms = String::new();
        for f in &tagged {
            let cond = match ctx.cond(&f.tagged) {
                Some(c) if c == "false" => continue,
                Some(c) => format!(" if {c}"),
                None => String::new(),
            };
            let lbl = label(s, f);
            arms.push_str(&format!(
                "{}{cond} => {{\nlet b = &mut payload;\ns.{} = {};\nc::expect_consumed(b, {lbl})?;\n}}\n",
                f.tag.unwrap_or_default(),
                field_ident(&f.name),
                ctx.read_field(s, f, true)?
            ));
        }
        let lbl = format!("\"{}._tagged_fields\"", s.name);
        let section = format!(
            "let count = c::read_unsigned_varint(b, {lbl})?;\nfor _ in 0..count {{\n#[allow(unused_mut)]\nlet (tag, mut payload) = c::read_tagged_field(b, {lbl})?;\nmatch tag {{\n{arms}_ => s.unknown_tagged_fields.push(c::RawTaggedField {{ tag, data: payload }}),\n}}\n}}\n// Tags go on the wire in ascending order; keep unknown ones in that canonical order so\n// that decoding what we encode gives back the same value.\ns.unknown_tagged_fields.sort_by_key(|f| f.tag);\n"
        );
        body.push_str(&guarded(&ctx.cond(&schema.flexible), &section));
    }
    body.push_str("Ok(s)\n");
    if !body.contains("s.") {
        body = "Ok(Self::default())\n".to_string();
        if has_flexible {
            unreachable!("a flexible struct always reads its tagged section");
        }
    }
    let sig = if uses_word(&body, "b") {
        "fn read_from(b: &mut Bytes, version: i16) -> c::DecodeResult<Self>"
    } else {
        "fn read_from(_b: &mut Bytes, version: i16) -> c::DecodeResult<Self>"
    };
    out.push_str(&finish_fn(sig, &flexible_expr, &body));

    // min_size
    let mut body = String::from("let mut n = 0;\n");
    for f in &s.fields {
        if f.tag.is_some() {
            continue;
        }
        let add = format!("n += {};\n", ctx.min_size_field(f)?);
        body.push_str(&guarded(&ctx.cond(&f.versions), &add));
    }
    if has_flexible {
        body.push_str(&guarded(&ctx.cond(&schema.flexible), "n += 1;\n"));
    }
    body.push_str("n\n");
    if body == "let mut n = 0;\nn\n" {
        body = "0\n".into();
    }
    out.push_str(
        "/// The fewest bytes this struct can take at `version`, to bound array counts.\n",
    );
    out.push_str("#[allow(dead_code)]\n");
    out.push_str(&finish_fn(
        "fn min_size(version: i16) -> usize",
        &flexible_expr,
        &body,
    ));

    // error_codes: responses only (the request metrics' ErrorsPerSec).
    if schema.kind == "response" {
        let mut body = String::new();
        for f in &s.fields {
            let id = field_ident(&f.name);
            let visit = match (&f.ty, is_option(f)) {
                (Type::Int16, false) if COUNTED_ERROR_FIELDS.contains(&f.name.as_str()) => {
                    format!("f(self.{id});\n")
                }
                (ty, _) if !carries_errors(schema, ty, 0) => continue,
                (Type::Struct(_), false) => format!("self.{id}.error_codes(version, f);\n"),
                (Type::Struct(_), true) => {
                    format!("if let Some(x) = &self.{id} {{\nx.error_codes(version, f);\n}}\n")
                }
                (Type::Array(inner), false) if matches!(**inner, Type::Struct(_)) => {
                    format!("for x in &self.{id} {{\nx.error_codes(version, f);\n}}\n")
                }
                (Type::Array(inner), true) if matches!(**inner, Type::Struct(_)) => format!(
                    "for x in self.{id}.iter().flatten() {{\nx.error_codes(version, f);\n}}\n"
                ),
                _ => continue,
            };
            body.push_str(&guarded(&ctx.cond(&f.versions), &visit));
        }
        if !uses_word(&body, "f") {
            body.push_str("let _ = f;\n");
        }
        out.push_str(
            "/// Calls `f` with every error code of this struct at `version`, nested ones \
             included (Kafka's `errorCounts()`).\n",
        );
        out.push_str(&finish_fn(
            "pub fn error_codes(&self, version: i16, f: &mut dyn FnMut(i16))",
            &flexible_expr,
            &body,
        ));
    }

    // sample
    let mut body = String::from("let mut s = Self::default();\n");
    for f in &s.fields {
        let versions = if f.tag.is_some() {
            f.tagged.and(&schema.flexible)
        } else {
            f.versions
        };
        let set = format!("s.{} = {};\n", field_ident(&f.name), ctx.sample_field(f));
        body.push_str(&guarded(&ctx.cond(&versions), &set));
    }
    body.push_str("s\n");
    if !body.contains("s.") {
        body = "let _ = rng;\nSelf::default()\n".into();
    }
    out.push_str("/// A random value that every version-`version` encoder accepts.\n");
    out.push_str("#[cfg(feature = \"testing\")]\n");
    out.push_str(&finish_fn(
        "pub fn sample(rng: &mut crate::testing::SampleRng, version: i16) -> Self",
        &flexible_expr,
        &body,
    ));
    writeln!(out, "}}\n")?;
    Ok(())
}

pub fn vstr(v: &Versions) -> String {
    match *v {
        Versions::None => "none".into(),
        Versions::Range { min, max: None } => format!("{min}+"),
        Versions::Range { min, max: Some(m) } if m == min => format!("{min}"),
        Versions::Range { min, max: Some(m) } => format!("{min}-{m}"),
    }
}

/// The module of one schema.
pub fn emit_schema(schema: &Schema) -> Result<String> {
    let mut out = String::new();
    writeln!(
        out,
        "//! `{}`: generated by `cargo xtask codegen` from Kafka's `{}`. Do not edit.\n",
        schema.name, schema.file
    )?;
    writeln!(out, "#![allow(clippy::all, unused_imports)]\n")?;
    writeln!(out, "use crate::codec as c;")?;
    writeln!(out, "use bytes::Bytes;\n")?;
    // Check that struct references resolve within the schema.
    for s in &schema.structs {
        for f in &s.fields {
            let mut t = &f.ty;
            while let Type::Array(inner) = t {
                t = inner;
            }
            if let Type::Struct(n) = t {
                let ctx = Ctx {
                    schema,
                    within: schema.valid,
                };
                if ctx.struct_named(n).is_none() {
                    bail!(
                        "{}: struct {n} referenced by {} is not defined",
                        schema.name,
                        f.name
                    );
                }
            }
        }
    }
    for s in &schema.structs {
        emit_struct(schema, s, &mut out)?;
    }
    let (min, max) = (
        schema.valid.min().unwrap_or(0),
        schema.valid.max().unwrap_or(i16::MAX),
    );
    let flex = match schema.flexible.min() {
        Some(m) => format!("Some({m})"),
        None => "None".into(),
    };
    writeln!(
        out,
        "impl crate::Message for {name} {{
    const NAME: &'static str = \"{name}\";
    const VERSIONS: crate::VersionRange = crate::VersionRange {{ min: {min}, max: {max} }};
    const FLEXIBLE_MIN_VERSION: Option<i16> = {flex};
    fn write_unchecked(&self, e: &mut c::Encoder, version: i16) -> Result<(), c::EncodeError> {{
        self.write_to(e, version)
    }}
    fn read_unchecked(b: &mut Bytes, version: i16) -> c::DecodeResult<Self> {{
        Self::read_from(b, version)
    }}
    #[cfg(feature = \"testing\")]
    fn sample(rng: &mut crate::testing::SampleRng, version: i16) -> Self {{
        Self::sample(rng, version)
    }}
}}",
        name = schema.name
    )?;
    Ok(out)
}
