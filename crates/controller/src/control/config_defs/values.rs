//! How a config value is read, as Kafka's `ConfigDef` reads it: [`ConfigDef::validate`]
//! (`parseType` and the validator), the DescribeConfigs type id, and the canonical text
//! Kafka prints a parsed value as (`convertToString`), so a value set in any spelling Kafka
//! accepts compares equal to Kafka's default.

use super::{response_type, ConfigDef, ConfigType, ConfigValueError};

impl ConfigDef {
    /// Parses `value` as Kafka's `ConfigDef.parseType` and checks its validator.
    pub fn validate(&self, value: &str) -> Result<(), ConfigValueError> {
        let invalid = |reason: String| ConfigValueError::InvalidValue {
            key: self.name.to_string(),
            value: value.to_string(),
            reason,
        };
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
                if n < min {
                    return Err(invalid(format!("Value must be at least {min}")));
                }
                if n > max {
                    return Err(invalid(format!("Value must be no more than {max}")));
                }
            }
            ConfigType::Short => {
                trimmed
                    .parse::<i16>()
                    .map_err(|_| invalid("Not a number of type SHORT".into()))?;
            }
            ConfigType::Long { min } => {
                let n: i64 = trimmed
                    .parse()
                    .map_err(|_| invalid("Not a number of type LONG".into()))?;
                if n < min {
                    return Err(invalid(format!("Value must be at least {min}")));
                }
            }
            ConfigType::Double { min, max } => {
                let n: f64 = trimmed
                    .parse()
                    .map_err(|_| invalid("Not a number of type DOUBLE".into()))?;
                if !(min..=max).contains(&n) {
                    return Err(invalid(format!("Value must be in [{min}, {max}]")));
                }
            }
            ConfigType::String { valid } => {
                if !valid.is_empty() && !valid.contains(&trimmed) {
                    return Err(invalid(format!(
                        "String must be one of: {}",
                        valid.join(", ")
                    )));
                }
            }
            ConfigType::CaseInsensitiveString { valid } => {
                if !valid.iter().any(|v| v.eq_ignore_ascii_case(trimmed)) {
                    return Err(invalid(format!(
                        "String must be one of (case insensitive): {}",
                        valid.join(", ")
                    )));
                }
            }
            ConfigType::Class => {
                if trimmed.is_empty() {
                    return Err(invalid("Expected a class name".into()));
                }
            }
            ConfigType::List { valid } => {
                if super::is_throttled_replicas_config(self.name) {
                    super::parse_throttled_replicas(self.name, value)?;
                }
                if valid.is_empty() {
                    return Ok(());
                }
                for item in trimmed.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    if !valid.contains(&item) {
                        return Err(invalid(format!(
                            "Invalid value {item}; must be one of: {}",
                            valid.join(", ")
                        )));
                    }
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
            ConfigType::Short => response_type::SHORT,
            ConfigType::Long { .. } => response_type::LONG,
            ConfigType::Double { .. } => response_type::DOUBLE,
            ConfigType::String { .. } | ConfigType::CaseInsensitiveString { .. } => {
                response_type::STRING
            }
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
            ConfigType::Short => trimmed
                .parse::<i16>()
                .map_or_else(|_| trimmed.to_string(), |n| n.to_string()),
            ConfigType::Long { .. } => trimmed
                .parse::<i64>()
                .map_or_else(|_| trimmed.to_string(), |n| n.to_string()),
            ConfigType::Double { .. } => trimmed
                .parse::<f64>()
                .map_or_else(|_| trimmed.to_string(), java_double),
            ConfigType::String { .. }
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

/// A double as Java's `Double.toString` prints ordinary values (`0.5`, `1.0`).
fn java_double(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e7 {
        format!("{n:.1}")
    } else {
        n.to_string()
    }
}
