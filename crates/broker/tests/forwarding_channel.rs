//! The broker's forwarding channel (Kafka's "forwarding" `NodeToControllerChannelManager`)
//! against a controller that has read a forwarded request and not answered it, as a paused
//! or cut-off active controller has: the request is not sent again before
//! `controller.socket.timeout.ms`. A forwarded admin request is not idempotent, and a copy
//! sent again after 2 s (the Raft request timeout the channel used before) was applied twice
//! in `cargo xtask chaos --seed 12 --txn --zombie --meta`: an ACL deleted after its
//! acknowledged creation came back when the first copy, delivered late, was applied by the
//! old controller leading again (docs/chaos.md).

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kraftd_broker::server::forwarding_request_timeout;
use kraftd_net::{InboundRequest, RequestHandler};
use kraftd_protocol::messages::create_acls_request::AclCreation;
use kraftd_protocol::messages::CreateAclsRequest;
use kraftd_protocol::{ApiKey, RequestBody, ResponseBody};
use tokio::sync::oneshot;
use tokio::time::Instant;

use common::{serve_fake_timed, Recorded};

/// A controller that reads every CreateAcls and never answers (it keeps the answer's sender).
#[derive(Default)]
struct SilentController {
    requests: Recorded<CreateAclsRequest>,
    unanswered: Mutex<Vec<oneshot::Sender<ResponseBody>>>,
}

impl RequestHandler for SilentController {
    async fn dispatch(&self, request: InboundRequest) -> Option<oneshot::Receiver<ResponseBody>> {
        let RequestBody::CreateAcls(body) = request.body else {
            return None;
        };
        self.requests.push(body);
        let (tx, rx) = oneshot::channel();
        self.unanswered.lock().unwrap().push(tx);
        Some(rx)
    }
}

#[tokio::test]
async fn a_forwarded_request_left_unanswered_is_not_sent_again_before_the_socket_timeout() {
    // Kafka's default controller.socket.timeout.ms.
    let timeout = forwarding_request_timeout(Duration::from_millis(30_000));
    assert_eq!(timeout, Duration::from_secs(30));
    let controller = Arc::new(SilentController::default());
    let (_server, channel, _raft) = serve_fake_timed(
        controller.clone(),
        ApiKey::CreateAcls,
        "forwarding".into(),
        timeout,
    )
    .await;
    let body = RequestBody::CreateAcls(CreateAclsRequest {
        creations: vec![AclCreation {
            resource_type: 2, // TOPIC
            resource_name: "t".into(),
            resource_pattern_type: 3, // LITERAL
            principal: "User:u".into(),
            host: "*".into(),
            operation: 3,       // READ
            permission_type: 3, // ALLOW
            ..Default::default()
        }],
        ..Default::default()
    });
    // The client's deadline: 5 s, past the 2 s after which the channel used to send it again.
    let got = channel
        .send(None, body, Instant::now() + Duration::from_secs(5), |_| {
            false
        })
        .await;
    assert!(got.is_err(), "the silent controller answered: {got:?}");
    assert_eq!(
        controller.requests.count(),
        1,
        "the forwarded CreateAcls was sent again while the first copy was unanswered"
    );
    // A longer socket timeout than Kafka's retry timeout is capped by it.
    assert_eq!(
        forwarding_request_timeout(Duration::from_secs(600)),
        Duration::from_secs(60)
    );
}
