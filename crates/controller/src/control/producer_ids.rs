//! `ProducerIdControlManager`: hands out blocks of producer ids to brokers, as Kafka's
//! `org.apache.kafka.controller.ProducerIdControlManager`. Each AllocateProducerIds from a
//! broker with its current epoch gets the next block of [`PRODUCER_ID_BLOCK_SIZE`] ids and
//! writes a `ProducerIdsRecord` naming the first id of the block after it, so a block is
//! never handed out twice, even across controller failover.
//!
//! Pure: reads the image, returns the record and the response.

use kraftd_protocol::messages::{AllocateProducerIdsRequest, AllocateProducerIdsResponse};
use kraftd_protocol::metadata::ProducerIdsRecord;
use kraftd_protocol::{ErrorCode, MetadataRecord};

use crate::control::replication::check_broker_epoch;
use crate::control::result::ControllerResult;
use crate::image::MetadataImage;

/// Kafka's `ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE`.
pub const PRODUCER_ID_BLOCK_SIZE: i32 = 1000;

/// Allocates producer id blocks. Holds nothing: all state is the image.
#[derive(Debug, Clone, Default)]
pub struct ProducerIdControlManager;

impl ProducerIdControlManager {
    pub fn new() -> Self {
        ProducerIdControlManager
    }

    /// AllocateProducerIds: STALE_BROKER_EPOCH unless the broker is registered with this
    /// epoch; UNKNOWN_SERVER_ERROR once the ids would pass `i64::MAX`, as in Kafka.
    pub fn allocate_producer_ids(
        &self,
        image: &MetadataImage,
        request: &AllocateProducerIdsRequest,
    ) -> ControllerResult<AllocateProducerIdsResponse> {
        let error = |code: ErrorCode| {
            ControllerResult::response_only(AllocateProducerIdsResponse {
                error_code: code.code(),
                ..Default::default()
            })
        };
        if let Err(code) = check_broker_epoch(image, request.broker_id, request.broker_epoch) {
            return error(code);
        }
        // The image says -1 before the first block; the first block starts at 0.
        let first = image.producer_ids.next_producer_id.max(0);
        let Some(next) = first.checked_add(i64::from(PRODUCER_ID_BLOCK_SIZE)) else {
            return error(ErrorCode::UnknownServerError);
        };
        let record = MetadataRecord::ProducerIds(ProducerIdsRecord {
            broker_id: request.broker_id,
            broker_epoch: request.broker_epoch,
            next_producer_id: next,
            ..Default::default()
        });
        ControllerResult::of(
            vec![record],
            AllocateProducerIdsResponse {
                error_code: 0,
                producer_id_start: first,
                producer_id_len: PRODUCER_ID_BLOCK_SIZE,
                ..Default::default()
            },
        )
    }
}
