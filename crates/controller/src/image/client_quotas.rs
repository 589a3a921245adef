//! Client quotas in the metadata image: for each entity (a combination of user, client id
//! or ip, each named or the default) its quota key → value, as Kafka's `ClientQuotasImage`.
//! A removed key disappears, and an entity left without keys disappears too.

use std::collections::BTreeMap;

use imbl::OrdMap;

/// All client quotas. Cheap to clone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientQuotasImage {
    pub(crate) entities: OrdMap<ClientQuotaEntity, OrdMap<String, f64>>,
}

/// A quota entity: entity type (`user`, `client-id`, `ip`) → name, `None` for the default.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ClientQuotaEntity(pub BTreeMap<String, Option<String>>);

impl ClientQuotasImage {
    /// The quotas of one entity.
    pub fn get(&self, entity: &ClientQuotaEntity) -> Option<&OrdMap<String, f64>> {
        self.entities.get(entity)
    }

    /// Entities with quotas, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&ClientQuotaEntity, &OrdMap<String, f64>)> {
        self.entities.iter()
    }
}
