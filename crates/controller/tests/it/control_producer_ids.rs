//! ProducerIdControlManager: consecutive blocks of 1000, STALE_BROKER_EPOCH, exhaustion.

use kraftd_controller::control::ProducerIdControlManager;
use kraftd_controller::MetadataImage;
use kraftd_protocol::messages::AllocateProducerIdsRequest;
use kraftd_protocol::metadata::ProducerIdsRecord;
use kraftd_protocol::{ErrorCode, MetadataRecord};

use kraftd_controller::testing::records::register_broker;

fn request(broker_id: i32, broker_epoch: i64) -> AllocateProducerIdsRequest {
    AllocateProducerIdsRequest {
        broker_id,
        broker_epoch,
        ..Default::default()
    }
}

#[test]
fn blocks_are_consecutive_and_never_reused() {
    let manager = ProducerIdControlManager::new();
    let mut image = MetadataImage::empty()
        .replay_all(&[register_broker(1, 10, false), register_broker(2, 20, false)])
        .unwrap();
    let mut starts = Vec::new();
    for (broker, epoch) in [(1, 10), (2, 20), (1, 10)] {
        let result = manager.allocate_producer_ids(&image, &request(broker, epoch));
        assert_eq!(result.response.error_code, 0);
        assert_eq!(result.response.producer_id_len, 1000);
        assert_eq!(result.records.len(), 1);
        starts.push(result.response.producer_id_start);
        image = image.replay_all(&result.records).unwrap();
    }
    assert_eq!(starts, vec![0, 1000, 2000]);
    assert_eq!(image.producer_ids.next_producer_id, 3000);
}

#[test]
fn stale_epoch_and_exhaustion() {
    let manager = ProducerIdControlManager::new();
    let image = MetadataImage::empty()
        .replay_all(&[register_broker(1, 10, false)])
        .unwrap();
    for (broker, epoch) in [(1, 9), (2, 10)] {
        let result = manager.allocate_producer_ids(&image, &request(broker, epoch));
        assert_eq!(
            result.response.error_code,
            ErrorCode::StaleBrokerEpoch.code()
        );
        assert!(result.records.is_empty());
    }
    let near_end = image
        .replay_all(&[MetadataRecord::ProducerIds(ProducerIdsRecord {
            broker_id: 1,
            broker_epoch: 10,
            next_producer_id: i64::MAX - 10,
            ..Default::default()
        })])
        .unwrap();
    let result = manager.allocate_producer_ids(&near_end, &request(1, 10));
    assert_eq!(
        result.response.error_code,
        ErrorCode::UnknownServerError.code()
    );
    assert!(result.records.is_empty());
}
