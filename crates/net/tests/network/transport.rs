//! The transport against real sockets: ApiVersions answered from the listener's table
//! (KIP-511's v0 fallback included), responses in request order, a malformed frame, an
//! unknown api key, an unadvertised api or an oversized size prefix closing only that
//! connection, a dropped response closing it (but not after acks=0), the connection cap, the
//! client channel's timeouts and connect failures, and how it tells a peer that is gone
//! (closed, reconnect refused) from a transient close.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kraftd_net::{
    serve, Channel, ClientConfig, ClientError, InboundRequest, RequestHandler, ServerConfig,
};
use kraftd_protocol::api_versions::{supported_range, ApiVersionsTable, ListenerType};
use kraftd_protocol::frame::{frame_chunks, split_frame};
use kraftd_protocol::header::{decode_response, encode_request};
use kraftd_protocol::messages::{
    ApiVersionsRequest, MetadataRequest, MetadataResponse, ProduceRequest, RequestHeader,
    VoteRequest, VoteResponse,
};
use kraftd_protocol::{ApiKey, RequestBody, ResponseBody, VersionRange};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, Mutex};
use tokio::task::JoinHandle;

const WAIT: Duration = Duration::from_secs(10);

/// Hands every request to the test, which answers (or not) through the sender.
#[derive(Debug)]
pub(crate) struct TestHandler {
    pub(crate) tx: mpsc::Sender<(InboundRequest, oneshot::Sender<ResponseBody>)>,
}

impl RequestHandler for TestHandler {
    async fn dispatch(&self, request: InboundRequest) -> Option<oneshot::Receiver<ResponseBody>> {
        let (reply, rx) = oneshot::channel();
        self.tx.send((request, reply)).await.ok()?;
        Some(rx)
    }
}

pub(crate) type Requests =
    Arc<Mutex<mpsc::Receiver<(InboundRequest, oneshot::Sender<ResponseBody>)>>>;

async fn server(config: ServerConfig) -> (String, Requests, JoinHandle<()>) {
    let mut table = ApiVersionsTable::new(ListenerType::Controller);
    table
        .add(ApiKey::Vote, VersionRange { min: 2, max: 2 })
        .unwrap();
    server_with(config, table).await
}

pub(crate) async fn server_with(
    config: ServerConfig,
    table: ApiVersionsTable,
) -> (String, Requests, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tx, rx) = mpsc::channel(64);
    let task = tokio::spawn(serve(
        listener,
        Arc::new(table),
        config,
        Arc::new(TestHandler { tx }),
    ));
    (addr, Arc::new(Mutex::new(rx)), task)
}

pub(crate) async fn next_request(
    requests: &Requests,
) -> (InboundRequest, oneshot::Sender<ResponseBody>) {
    tokio::time::timeout(WAIT, requests.lock().await.recv())
        .await
        .expect("a request arrives")
        .expect("server running")
}

pub(crate) fn request_frame(
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: RequestBody,
) -> Vec<u8> {
    let header = RequestHeader {
        request_api_key: api_key.code(),
        request_api_version: version,
        correlation_id,
        client_id: Some("test".into()),
        ..Default::default()
    };
    let mut out = Vec::new();
    for c in frame_chunks(encode_request(&header, &body).unwrap()) {
        out.extend_from_slice(&c);
    }
    out
}

/// Reads one response frame, or `None` when the server closed the connection.
async fn read_frame(s: &mut TcpStream, buf: &mut BytesMut) -> Option<Bytes> {
    loop {
        if let Some(f) = split_frame(buf, 1 << 20).unwrap() {
            return Some(f);
        }
        let n = tokio::time::timeout(WAIT, s.read_buf(buf))
            .await
            .expect("the server answers or closes")
            .ok()?;
        if n == 0 {
            return None;
        }
    }
}

async fn api_versions(
    s: &mut TcpStream,
    version: i16,
    correlation_id: i32,
) -> (i16, kraftd_protocol::messages::ApiVersionsResponse) {
    // The codec refuses to encode a version from the future: encode v3 and patch the
    // header's version field (after the size prefix and the api key).
    let mut frame = request_frame(
        ApiKey::ApiVersions,
        version.min(3),
        correlation_id,
        RequestBody::ApiVersions(ApiVersionsRequest {
            client_software_name: "kraftd-test".into(),
            client_software_version: "1.0".into(),
            ..Default::default()
        }),
    );
    frame[6..8].copy_from_slice(&version.to_be_bytes());
    s.write_all(&frame).await.unwrap();
    let mut buf = BytesMut::new();
    let f = read_frame(s, &mut buf)
        .await
        .expect("an ApiVersions answer");
    // KIP-511: the v0 fallback body is read at v0.
    let at = if version > 5 { 0 } else { version };
    let (header, body) = decode_response(ApiKey::ApiVersions, at, f).unwrap();
    assert_eq!(header.correlation_id, correlation_id);
    match body {
        ResponseBody::ApiVersions(r) => (at, r),
        other => panic!("not ApiVersions: {other:?}"),
    }
}

#[tokio::test]
async fn api_versions_lists_the_controller_table_and_falls_back_to_v0() {
    let (addr, _requests, _task) = server(ServerConfig::default()).await;
    let mut s = TcpStream::connect(&addr).await.unwrap();
    let (_, r) = api_versions(&mut s, 3, 1).await;
    assert_eq!(r.error_code, 0);
    let vote = r
        .api_keys
        .iter()
        .find(|k| k.api_key == ApiKey::Vote.code())
        .expect("Vote advertised");
    assert_eq!((vote.min_version, vote.max_version), (2, 2));
    assert!(r
        .api_keys
        .iter()
        .all(|k| k.api_key != ApiKey::Produce.code()));
    // A version from the future: error 35 with the ranges, and the connection stays open.
    let (_, r) = api_versions(&mut s, 99, 2).await;
    assert_eq!(r.error_code, 35);
    let (_, r) = api_versions(&mut s, 3, 3).await;
    assert_eq!(r.error_code, 0);
}

#[tokio::test]
async fn bad_input_closes_only_that_connection() {
    let (addr, _requests, _task) = server(ServerConfig::default()).await;
    let mut good = TcpStream::connect(&addr).await.unwrap();
    api_versions(&mut good, 3, 1).await;

    let hostile: Vec<Vec<u8>> = vec![
        // Unknown api key 9999.
        vec![0, 0, 0, 10, 0x27, 0x0f, 0, 0, 0, 0, 0, 7, 0xff, 0xff],
        // A header cut short.
        vec![0, 0, 0, 3, 0, 18, 0],
        // A size prefix over socket.request.max.bytes: refused before any body is sent.
        vec![0x7f, 0xff, 0xff, 0xff],
        // A negative size.
        vec![0xff, 0xff, 0xff, 0xfe],
        // An api the controller listener does not advertise (Metadata).
        request_frame(
            ApiKey::Metadata,
            12,
            5,
            RequestBody::Metadata(MetadataRequest::default()),
        ),
    ];
    for bytes in hostile {
        let mut s = TcpStream::connect(&addr).await.unwrap();
        s.write_all(&bytes).await.unwrap();
        let mut buf = BytesMut::new();
        assert_eq!(
            read_frame(&mut s, &mut buf).await,
            None,
            "{bytes:?} must close the connection"
        );
    }
    // The well-behaved connection never noticed.
    let (_, r) = api_versions(&mut good, 3, 2).await;
    assert_eq!(r.error_code, 0);
}

#[tokio::test]
async fn responses_go_out_in_request_order() {
    let (addr, requests, _task) = server(ServerConfig::default()).await;
    let mut s = TcpStream::connect(&addr).await.unwrap();
    for corr in [10, 11] {
        s.write_all(&request_frame(
            ApiKey::Vote,
            2,
            corr,
            RequestBody::Vote(VoteRequest::default()),
        ))
        .await
        .unwrap();
    }
    let (first, reply_first) = next_request(&requests).await;
    let (second, reply_second) = next_request(&requests).await;
    assert_eq!(
        (first.header.correlation_id, second.header.correlation_id),
        (10, 11)
    );
    assert_eq!(first.header.client_id.as_deref(), Some("test"));
    // Answer the second first: it must still be written after the first.
    reply_second
        .send(ResponseBody::Vote(VoteResponse::default()))
        .unwrap();
    reply_first
        .send(ResponseBody::Vote(VoteResponse::default()))
        .unwrap();
    let mut buf = BytesMut::new();
    for corr in [10, 11] {
        let f = read_frame(&mut s, &mut buf).await.expect("a response");
        let (h, _) = decode_response(ApiKey::Vote, 2, f).unwrap();
        assert_eq!(h.correlation_id, corr);
    }
}

/// Every request gets exactly one response or a closed connection: a response the handler
/// drops closes the connection (the client retries at once instead of waiting out its
/// timeout), except for a Produce with acks=0, whose client reads none.
#[tokio::test]
async fn a_dropped_response_closes_the_connection_except_after_acks_0_produce() {
    let mut table = ApiVersionsTable::new(ListenerType::Broker);
    for key in [ApiKey::Produce, ApiKey::Metadata] {
        table.add(key, supported_range(key)).unwrap();
    }
    let (addr, requests, _task) = server_with(ServerConfig::default(), table).await;
    let mut s = TcpStream::connect(&addr).await.unwrap();
    let mut buf = BytesMut::new();
    let produce = |acks: i16, corr: i32| {
        request_frame(
            ApiKey::Produce,
            9,
            corr,
            RequestBody::Produce(ProduceRequest {
                acks,
                ..Default::default()
            }),
        )
    };
    s.write_all(&produce(0, 1)).await.unwrap();
    drop(next_request(&requests).await);
    s.write_all(&request_frame(
        ApiKey::Metadata,
        12,
        2,
        RequestBody::Metadata(MetadataRequest::default()),
    ))
    .await
    .unwrap();
    let (_, reply) = next_request(&requests).await;
    reply
        .send(ResponseBody::Metadata(MetadataResponse::default()))
        .unwrap();
    let f = read_frame(&mut s, &mut buf)
        .await
        .expect("the connection stays open after acks=0");
    let (h, _) = decode_response(ApiKey::Metadata, 12, f).unwrap();
    assert_eq!(h.correlation_id, 2);
    s.write_all(&produce(1, 3)).await.unwrap();
    drop(next_request(&requests).await);
    assert!(
        read_frame(&mut s, &mut buf).await.is_none(),
        "a lost response closes the connection"
    );
}

#[tokio::test]
async fn a_connection_over_max_connections_waits_for_a_slot_and_one_over_the_address_cap_is_closed()
{
    use kraftd_net::connection_quotas::{
        ConnectionQuotaConfig, ConnectionQuotas, QUOTA_WINDOW_DEFAULT,
    };
    let quotas = ConnectionQuotas::new(
        ConnectionQuotaConfig {
            max_connections: 1,
            ..Default::default()
        },
        QUOTA_WINDOW_DEFAULT,
    );
    let config = ServerConfig {
        connection_quotas: std::sync::Arc::clone(&quotas),
        ..ServerConfig::default()
    };
    let (addr, _requests, _task) = server(config).await;
    let mut first = TcpStream::connect(&addr).await.unwrap();
    api_versions(&mut first, 3, 1).await;
    // Kafka's acceptor waits for a slot: the second connection is served once the first
    // closes.
    let mut second = TcpStream::connect(&addr).await.unwrap();
    second
        .write_all(&request_frame(
            ApiKey::ApiVersions,
            3,
            1,
            RequestBody::ApiVersions(ApiVersionsRequest::default()),
        ))
        .await
        .unwrap();
    let mut buf = BytesMut::new();
    assert!(
        tokio::time::timeout(
            Duration::from_millis(300),
            read_frame(&mut second, &mut buf)
        )
        .await
        .is_err(),
        "served over max.connections"
    );
    drop(first);
    let f = tokio::time::timeout(Duration::from_secs(10), read_frame(&mut second, &mut buf))
        .await
        .expect("served once a slot frees")
        .expect("an answer");
    assert_eq!(
        decode_response(ApiKey::ApiVersions, 3, f)
            .unwrap()
            .0
            .correlation_id,
        1
    );

    // At max.connections.per.ip the next connection from the address is closed at accept.
    quotas.reconfigure(ConnectionQuotaConfig {
        max_connections_per_ip: 1,
        ..Default::default()
    });
    let mut third = TcpStream::connect(&addr).await.unwrap();
    let _ = third
        .write_all(&request_frame(
            ApiKey::ApiVersions,
            3,
            2,
            RequestBody::ApiVersions(ApiVersionsRequest::default()),
        ))
        .await;
    let mut buf = BytesMut::new();
    assert_eq!(read_frame(&mut third, &mut buf).await, None);
    api_versions(&mut second, 3, 3).await;
}

#[tokio::test]
async fn channel_calls_time_out_and_report_unreachable_destinations() {
    let (addr, requests, _task) = server(ServerConfig::default()).await;
    let config = ClientConfig {
        request_timeout: Duration::from_millis(200),
        ..ClientConfig::new("raft-client-7")
    };
    let channel = Channel::spawn(addr.clone(), config.clone());

    // Answered: the header carries the client id and our correlation id.
    let call = {
        let channel = channel.clone();
        tokio::spawn(async move {
            channel
                .call(41, 2, RequestBody::Vote(VoteRequest::default()))
                .await
        })
    };
    let (req, reply) = next_request(&requests).await;
    assert_eq!(req.header.client_id.as_deref(), Some("raft-client-7"));
    assert_eq!(req.header.correlation_id, 41);
    reply
        .send(ResponseBody::Vote(VoteResponse {
            error_code: 0,
            ..Default::default()
        }))
        .unwrap();
    assert!(matches!(call.await.unwrap(), Ok(ResponseBody::Vote(_))));

    // Never answered: a timeout, then the next call reconnects and works.
    let call = {
        let channel = channel.clone();
        tokio::spawn(async move {
            channel
                .call(42, 2, RequestBody::Vote(VoteRequest::default()))
                .await
        })
    };
    let (_held, _reply_held) = next_request(&requests).await;
    assert!(matches!(
        call.await.unwrap(),
        Err(ClientError::Timeout { .. })
    ));
    let call = {
        let channel = channel.clone();
        tokio::spawn(async move {
            channel
                .call(43, 2, RequestBody::Vote(VoteRequest::default()))
                .await
        })
    };
    let (req, reply) = next_request(&requests).await;
    assert_eq!(req.header.correlation_id, 43);
    reply
        .send(ResponseBody::Vote(VoteResponse::default()))
        .unwrap();
    assert!(call.await.unwrap().is_ok());

    // Nobody listening: a connect failure, then backoff.
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead = closed.local_addr().unwrap().to_string();
    drop(closed);
    let channel = Channel::spawn(dead, config);
    let first = channel
        .call(1, 2, RequestBody::Vote(VoteRequest::default()))
        .await;
    assert!(
        matches!(first, Err(ClientError::ConnectFailed { .. })),
        "{first:?}"
    );
    let second = channel
        .call(2, 2, RequestBody::Vote(VoteRequest::default()))
        .await;
    assert!(
        matches!(
            second,
            Err(ClientError::BackingOff { .. } | ClientError::ConnectFailed { .. })
        ),
        "{second:?}"
    );
}

/// Accepts one connection on `listener`, reads one request frame from it and closes it;
/// `keep_listening` false drops the listener first (a crashed process: nothing listens).
async fn close_after_one_request(listener: TcpListener, keep_listening: bool) -> TcpListener {
    let (mut socket, _) = listener.accept().await.unwrap();
    let mut buf = BytesMut::new();
    while split_frame(&mut buf, 1 << 20).unwrap().is_none() {
        assert!(socket.read_buf(&mut buf).await.unwrap() > 0);
    }
    if !keep_listening {
        drop(listener);
        drop(socket);
        return TcpListener::bind("127.0.0.1:0").await.unwrap();
    }
    drop(socket);
    listener
}

#[tokio::test]
async fn a_closed_connection_is_peer_gone_only_when_the_reconnect_is_refused() {
    let config = ClientConfig::new("peer-gone-test");
    // The peer's process dies with the request in flight: its port refuses the reconnect.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let server = tokio::spawn(close_after_one_request(listener, false));
    let channel = Channel::spawn(address, config.clone());
    let outcome = tokio::time::timeout(
        WAIT,
        channel.call(1, 2, RequestBody::Vote(VoteRequest::default())),
    )
    .await
    .unwrap();
    server.await.unwrap();
    assert!(
        matches!(&outcome, Err(e @ ClientError::PeerGone { .. }) if e.is_peer_gone()),
        "{outcome:?}"
    );

    // A transient close, the peer alive: the reconnect succeeds, the request fails as
    // disconnected (not gone) and the next one goes over the new connection.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let server = tokio::spawn(close_after_one_request(listener, true));
    let channel = Channel::spawn(address, config);
    let outcome = tokio::time::timeout(
        WAIT,
        channel.call(1, 2, RequestBody::Vote(VoteRequest::default())),
    )
    .await
    .unwrap();
    assert!(
        matches!(&outcome, Err(e @ ClientError::Disconnected { .. }) if !e.is_peer_gone()),
        "{outcome:?}"
    );
    let listener = server.await.unwrap();
    // The channel made the new connection itself, before any further request.
    tokio::time::timeout(WAIT, listener.accept())
        .await
        .expect("the channel reconnected at once")
        .unwrap();
}

/// Tells the test which connections closed.
#[derive(Debug)]
struct ClosingHandler {
    closed: mpsc::UnboundedSender<std::net::SocketAddr>,
}

impl RequestHandler for ClosingHandler {
    async fn dispatch(&self, _request: InboundRequest) -> Option<oneshot::Receiver<ResponseBody>> {
        None
    }

    fn connection_closed(&self, peer: std::net::SocketAddr) {
        let _ = self.closed.send(peer);
    }
}

#[tokio::test]
async fn the_handler_hears_of_each_closed_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (closed, mut closed_rx) = mpsc::unbounded_channel();
    let table = ApiVersionsTable::new(ListenerType::Controller);
    let _task = tokio::spawn(serve(
        listener,
        Arc::new(table),
        ServerConfig::default(),
        Arc::new(ClosingHandler { closed }),
    ));
    let client = TcpStream::connect(addr).await.unwrap();
    let local = client.local_addr().unwrap();
    drop(client);
    let peer = tokio::time::timeout(WAIT, closed_rx.recv())
        .await
        .expect("the close is reported")
        .expect("server running");
    assert_eq!(peer, local);
}

/// The server keeps no read buffer between frames (it gives it back while a connection
/// waits and takes one when bytes arrive): whatever the reads cut, every frame arrives
/// whole and in order — a frame many times the read chunk, one whose size prefix and body
/// come in pieces with waits between them, a burst of pipelined requests in one write, and
/// a connection that idles between them and is then served again.
#[tokio::test]
async fn frames_arrive_whole_however_the_reads_cut_them() {
    let mut table = ApiVersionsTable::new(ListenerType::Broker);
    table
        .add(ApiKey::Metadata, supported_range(ApiKey::Metadata))
        .unwrap();
    let (addr, requests, _task) = server_with(ServerConfig::default(), table).await;
    let mut s = TcpStream::connect(&addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    let mut buf = BytesMut::new();
    let metadata = |corr: i32, topics: usize| {
        let topics = (0..topics)
            .map(
                |i| kraftd_protocol::messages::metadata_request::MetadataRequestTopic {
                    name: Some(format!("topic-{corr}-{i:05}")),
                    ..Default::default()
                },
            )
            .collect();
        request_frame(
            ApiKey::Metadata,
            12,
            corr,
            RequestBody::Metadata(MetadataRequest {
                topics: Some(topics),
                ..Default::default()
            }),
        )
    };
    // Answers the next request, checking it is `corr` naming `topics` topics.
    let answer = |corr: i32, topics: usize| {
        let requests = Arc::clone(&requests);
        async move {
            let (request, reply) = next_request(&requests).await;
            assert_eq!(request.header.correlation_id, corr);
            let RequestBody::Metadata(body) = request.body else {
                panic!("not Metadata: {:?}", request.body)
            };
            let names: Vec<String> = body
                .topics
                .unwrap_or_default()
                .into_iter()
                .map(|t| t.name.unwrap_or_default())
                .collect();
            let expected: Vec<String> = (0..topics)
                .map(|i| format!("topic-{corr}-{i:05}"))
                .collect();
            assert_eq!(names, expected, "request {corr} arrived whole");
            reply
                .send(ResponseBody::Metadata(MetadataResponse::default()))
                .unwrap();
        }
    };

    // A frame of ~100 KiB (the read chunk is 8 KiB), in one write.
    let big = metadata(1, 5000);
    assert!(big.len() > 64 * 1024);
    s.write_all(&big).await.unwrap();
    answer(1, 5000).await;
    let f = read_frame(&mut s, &mut buf).await.expect("a response");
    assert_eq!(
        decode_response(ApiKey::Metadata, 12, f)
            .unwrap()
            .0
            .correlation_id,
        1
    );

    // The same frame cut inside the size prefix, inside the body, and at the prefix's end,
    // with pauses so that the server waits (holding the part read) between the pieces.
    let frame = metadata(2, 3000);
    for piece in [&frame[..2], &frame[2..4], &frame[4..5000], &frame[5000..]] {
        s.write_all(piece).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    answer(2, 3000).await;
    let f = read_frame(&mut s, &mut buf).await.expect("a response");
    assert_eq!(
        decode_response(ApiKey::Metadata, 12, f)
            .unwrap()
            .0
            .correlation_id,
        2
    );

    // Idle (the server gives its read buffer back), then 300 small requests and a large one
    // pipelined in one write: each arrives whole, in order, and is answered in order.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut burst = Vec::new();
    for corr in 3..303 {
        burst.extend_from_slice(&metadata(corr, 3));
    }
    burst.extend_from_slice(&metadata(303, 2000));
    let writer = {
        let (mut rd, mut wr) = s.into_split();
        let writer = tokio::spawn(async move {
            wr.write_all(&burst).await.unwrap();
            wr
        });
        for corr in 3..303 {
            answer(corr, 3).await;
        }
        answer(303, 2000).await;
        for corr in 3..304 {
            let f = loop {
                if let Some(f) = split_frame(&mut buf, 1 << 20).unwrap() {
                    break f;
                }
                let n = tokio::time::timeout(WAIT, rd.read_buf(&mut buf))
                    .await
                    .expect("the server answers")
                    .unwrap();
                assert_ne!(n, 0, "the server closed the connection");
            };
            let (h, _) = decode_response(ApiKey::Metadata, 12, f).unwrap();
            assert_eq!(h.correlation_id, corr);
        }
        let wr = writer.await.unwrap();
        rd.reunite(wr).unwrap()
    };
    let mut s = writer;

    // Idle again, then served again on the same connection.
    tokio::time::sleep(Duration::from_millis(200)).await;
    s.write_all(&metadata(304, 1)).await.unwrap();
    answer(304, 1).await;
    let f = read_frame(&mut s, &mut buf).await.expect("a response");
    assert_eq!(
        decode_response(ApiKey::Metadata, 12, f)
            .unwrap()
            .0
            .correlation_id,
        304
    );
}
