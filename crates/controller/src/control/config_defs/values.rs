//! How a config value is read, as Kafka's `ConfigDef` reads it: [`ConfigDef::validate`]
//! (`parseType` and the validator), the DescribeConfigs type id, and the canonical text
//! Kafka prints a parsed value as (`convertToString`), so a value set in any spelling Kafka
//! accepts compares equal to Kafka's default.

use super::{response_type, ConfigDef, ConfigType, ConfigValueError, COMPRESSION_GZIP_LEVEL};

impl ConfigDef {
    /// Parses `value` as Kafka's `ConfigDef.parseType` and checks its validator, refusing
    /// with Kafka's `ConfigException` message (a value out of range is named as parsed).
    pub fn validate(&self, value: &str) -> Result<(), ConfigValueError> {
        let invalid_as = |value: String, reason: String| ConfigValueError::InvalidValue {
            key: self.name.to_string(),
            value,
            reason,
        };
        let invalid = |reason: String| invalid_as(value.to_string(), reason);
        let trimmed = value.trim();
        match self.config_type {
            ConfigType::Boolean => {
                if !trimmed.eq_ignore_ascii_case("true") && !trimmed.eq_ignore_ascii_case("false") {
                    return Err(invalid("Expected value to be either true or false".into()));
                }
            }
            ConfigType::Int { min, max } => {
                let n: i32 = trimmed
                    .parse()
                    .map_err(|_| invalid("Not a number of type INT".into()))?;
                if self.name == COMPRESSION_GZIP_LEVEL {
                    if n != -1 && !(1..=9).contains(&n) {
                        return Err(invalid_as(
                            n.to_string(),
                            "Value must be between 1 and 9 or equal to -1".into(),
                        ));
                    }
                    return Ok(());
                }
                check_range(n, Some(min), (max != i32::MAX).then_some(max))
                    .map_err(|reason| invalid_as(n.to_string(), reason))?;
            }
            ConfigType::Short { min } => {
                let n: i16 = trimmed
                    .parse()
                    .map_err(|_| invalid("Not a number of type SHORT".into()))?;
                check_range(n, Some(min), None)
                    .map_err(|reason| invalid_as(n.to_string(), reason))?;
            }
            ConfigType::Long { min } => {
                let n: i64 = trimmed
                    .parse()
                    .map_err(|_| invalid("Not a number of type LONG".into()))?;
                check_range(n, Some(min), None)
                    .map_err(|reason| invalid_as(n.to_string(), reason))?;
            }
            ConfigType::Double { min, max } => {
                let n: f64 = parse_java_double(trimmed)
                    .ok_or_else(|| invalid("Not a number of type DOUBLE".into()))?;
                // Kafka's Range compares, so NaN passes; a bound at the type's extreme is
                // no bound (Kafka defines those doubles without a validator).
                if min > f64::MIN && n < min {
                    return Err(invalid_as(
                        java_double(n),
                        format!("Value must be at least {}", java_number(min)),
                    ));
                }
                if max < f64::MAX && n > max {
                    return Err(invalid_as(
                        java_double(n),
                        format!("Value must be no more than {}", java_number(max)),
                    ));
                }
            }
            ConfigType::String { .. } if self.name == super::SHARE_AUTO_OFFSET_RESET => {
                if super::group::check_share_auto_offset_reset(trimmed).is_err() {
                    return Err(invalid_as(
                        trimmed.to_string(),
                        format!(
                            "Invalid value `{trimmed}` for configuration {}. The value must be \
                             either 'earliest', 'latest' or of the format \
                             'by_duration:<PnDTnHnMn.nS>'.",
                            self.name
                        ),
                    ));
                }
            }
            ConfigType::String { valid } => {
                if !valid.is_empty() && !valid.contains(&trimmed) {
                    return Err(invalid_as(
                        trimmed.to_string(),
                        format!("String must be one of: {}", valid.join(", ")),
                    ));
                }
            }
            ConfigType::NonEmptyString => {
                if trimmed.is_empty() {
                    return Err(invalid_as(String::new(), "String must be non-empty".into()));
                }
            }
            ConfigType::CaseInsensitiveString { valid } => {
                if !valid.iter().any(|v| v.eq_ignore_ascii_case(trimmed)) {
                    return Err(invalid_as(
                        trimmed.to_string(),
                        format!(
                            "String must be one of (case insensitive): {}",
                            valid.join(", ")
                        ),
                    ));
                }
            }
            ConfigType::Class => {
                if trimmed.is_empty() {
                    return Err(invalid("Expected a class name".into()));
                }
            }
            ConfigType::List { valid, empty } => {
                if super::is_throttled_replicas_config(self.name) {
                    super::parse_throttled_replicas(self.name, value)?;
                }
                if valid.is_empty() && empty {
                    return Ok(());
                }
                // Kafka's ValidList: parsed by splitting the trimmed text on commas (with
                // the spaces around them); "" is the empty list.
                let items: Vec<&str> = if trimmed.is_empty() {
                    Vec::new()
                } else {
                    trimmed.split(',').map(str::trim).collect()
                };
                let config_error = |message: String| ConfigValueError::ConfigError {
                    key: self.name.to_string(),
                    message,
                };
                if items.is_empty() {
                    if empty {
                        return Ok(());
                    }
                    let values = if valid.is_empty() {
                        "any non-empty value".to_string()
                    } else {
                        format!("[{}]", valid.join(", "))
                    };
                    return Err(config_error(format!(
                        "Configuration '{}' must not be empty. Valid values include: {values}",
                        self.name
                    )));
                }
                if items.iter().any(|i| i.is_empty()) {
                    return Err(config_error(format!(
                        "Configuration '{}' values must not be empty.",
                        self.name
                    )));
                }
                let distinct: std::collections::BTreeSet<&str> = items.iter().copied().collect();
                if distinct.len() != items.len() {
                    return Err(config_error(format!(
                        "Configuration '{}' values must not be duplicated.",
                        self.name
                    )));
                }
                if let Some(item) = items
                    .iter()
                    .find(|i| !valid.is_empty() && !valid.contains(i))
                {
                    return Err(invalid_as(
                        item.to_string(),
                        format!("String must be one of: {}", valid.join(", ")),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Whether APPEND and SUBTRACT apply (Kafka allows them only on LIST configs).
    pub fn is_list(&self) -> bool {
        matches!(self.config_type, ConfigType::List { .. })
    }

    /// Kafka's `DescribeConfigsResponse.ConfigType` id of this config ([`response_type`]).
    pub fn response_type(&self) -> i8 {
        if self.sensitive {
            return response_type::PASSWORD;
        }
        match self.config_type {
            ConfigType::Boolean => response_type::BOOLEAN,
            ConfigType::Int { .. } => response_type::INT,
            ConfigType::Short { .. } => response_type::SHORT,
            ConfigType::Long { .. } => response_type::LONG,
            ConfigType::Double { .. } => response_type::DOUBLE,
            ConfigType::String { .. }
            | ConfigType::NonEmptyString
            | ConfigType::CaseInsensitiveString { .. } => response_type::STRING,
            ConfigType::Class => response_type::CLASS,
            ConfigType::List { .. } => response_type::LIST,
        }
    }

    /// `value` as Kafka prints the parsed value (`ConfigDef.convertToString`): trimmed,
    /// booleans in lower case, numbers re-printed, list items trimmed and joined by commas.
    /// A value that does not parse is returned trimmed.
    pub fn canonical_value(&self, value: &str) -> String {
        let trimmed = value.trim();
        match self.config_type {
            ConfigType::Boolean => trimmed.to_ascii_lowercase(),
            ConfigType::Int { .. } => trimmed
                .parse::<i32>()
                .map_or_else(|_| trimmed.to_string(), |n| n.to_string()),
            ConfigType::Short { .. } => trimmed
                .parse::<i16>()
                .map_or_else(|_| trimmed.to_string(), |n| n.to_string()),
            ConfigType::Long { .. } => trimmed
                .parse::<i64>()
                .map_or_else(|_| trimmed.to_string(), |n| n.to_string()),
            ConfigType::Double { .. } => {
                parse_java_double(trimmed).map_or_else(|| trimmed.to_string(), java_double)
            }
            ConfigType::String { .. }
            | ConfigType::NonEmptyString
            | ConfigType::CaseInsensitiveString { .. }
            | ConfigType::Class => trimmed.to_string(),
            ConfigType::List { .. } => trimmed
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(","),
        }
    }
}

/// `n` is at least `min` and at most `max` (when given), or Kafka's `Range` message.
fn check_range<T: PartialOrd + std::fmt::Display>(
    n: T,
    min: Option<T>,
    max: Option<T>,
) -> Result<(), String> {
    if let Some(min) = min.filter(|m| n < *m) {
        return Err(format!("Value must be at least {min}"));
    }
    if let Some(max) = max.filter(|m| n > *m) {
        return Err(format!("Value must be no more than {max}"));
    }
    Ok(())
}

/// A double as Java's `Double.parseDouble` reads one (Rust's parser, but `NaN` and
/// `Infinity` spelled as Java spells them).
fn parse_java_double(text: &str) -> Option<f64> {
    match text {
        "NaN" | "+NaN" | "-NaN" => Some(f64::NAN),
        "Infinity" | "+Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ if text
            .chars()
            .any(|c| c.is_ascii_alphabetic() && !matches!(c, 'e' | 'E')) =>
        {
            None
        }
        _ => text.parse().ok(),
    }
}

/// A bound as Kafka writes it in a `Range` of doubles built from integers (`0`, `1`).
fn java_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        java_double(n)
    }
}

/// A double as Java's `Double.toString` prints ordinary values (`0.5`, `1.0`).
fn java_double(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e7 {
        format!("{n:.1}")
    } else {
        n.to_string()
    }
}
