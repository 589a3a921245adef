//! The dynamic configurations in the metadata image: for each resource (topic, broker,
//! broker logger, client metrics, group) its key → value overrides, as Kafka's
//! `ConfigurationsImage`. A `ConfigRecord` with a null value deletes a key; a resource left
//! without keys disappears, so "no overrides" has one representation.

use imbl::OrdMap;

/// All dynamic configs. Cheap to clone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigsImage {
    pub(crate) resources: OrdMap<ConfigResource, OrdMap<String, String>>,
}

/// Kafka's `ConfigResource.Type`, with its ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConfigResourceType {
    Topic = 2,
    Broker = 4,
    BrokerLogger = 8,
    ClientMetrics = 16,
    Group = 32,
}

/// A config resource: type and name (a broker id as text, or empty for the cluster default).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConfigResource {
    pub resource_type: ConfigResourceType,
    pub name: String,
}

impl ConfigsImage {
    /// The overrides of one resource (empty if it has none).
    pub fn get(&self, resource: &ConfigResource) -> Option<&OrdMap<String, String>> {
        self.resources.get(resource)
    }

    /// One key of one resource.
    pub fn value(&self, resource: &ConfigResource, key: &str) -> Option<&str> {
        self.resources
            .get(resource)
            .and_then(|m| m.get(key))
            .map(String::as_str)
    }

    /// The resources of one type with overrides, in name order (a range of the map, so
    /// group configs are read without walking every topic's).
    pub fn of_type(
        &self,
        resource_type: ConfigResourceType,
    ) -> impl Iterator<Item = (&ConfigResource, &OrdMap<String, String>)> {
        self.resources
            .range(ConfigResource::new(resource_type, "")..)
            .take_while(move |(r, _)| r.resource_type == resource_type)
    }

    /// Resources with overrides, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&ConfigResource, &OrdMap<String, String>)> {
        self.resources.iter()
    }
}

impl ConfigResourceType {
    /// The type a record's byte names; `None` for ids Kafka does not define here.
    pub fn from_i8(id: i8) -> Option<Self> {
        match id {
            2 => Some(ConfigResourceType::Topic),
            4 => Some(ConfigResourceType::Broker),
            8 => Some(ConfigResourceType::BrokerLogger),
            16 => Some(ConfigResourceType::ClientMetrics),
            32 => Some(ConfigResourceType::Group),
            _ => None,
        }
    }

    pub fn code(self) -> i8 {
        self as i8
    }
}

impl ConfigResource {
    pub fn new(resource_type: ConfigResourceType, name: impl Into<String>) -> Self {
        ConfigResource {
            resource_type,
            name: name.into(),
        }
    }

    pub fn topic(name: impl Into<String>) -> Self {
        ConfigResource::new(ConfigResourceType::Topic, name)
    }
}
