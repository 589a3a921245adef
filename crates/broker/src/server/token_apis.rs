//! The delegation token APIs on a broker listener, as Kafka's `KafkaApis`
//! (`handleCreateTokenRequest`, `handleRenewTokenRequest`, `handleExpireTokenRequest`,
//! `handleDescribeTokensRequest`). Create, Renew and Expire are checked here first — no
//! token API from a token-authenticated session, a PLAINTEXT connection or a one-way SSL one
//! (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED); a token for someone else needs CREATE_TOKENS on
//! that user; renewers must be users — and then forwarded to the controller, which issues
//! them. Describe is answered from the metadata image, with each token's HMAC derived from
//! `delegation.token.secret.key` (`RequestAuth::describe_delegation_tokens`, which
//! controllers answer with too).

use kraftd_controller::auth::RequestAuth;
use kraftd_controller::control::acl::RESOURCE_TYPE_USER;
use kraftd_controller::control::delegation_tokens::{
    create_refusal, token_api_refused, token_requests_allowed,
};
use kraftd_controller::publisher::OPERATION_CREATE_TOKENS;
use kraftd_net::{KafkaPrincipal, Session};
use kraftd_protocol::{ErrorCode, RequestBody, ResponseBody};

/// The answer to a Create, Renew or Expire that must not be forwarded, if any (Kafka's
/// checks before `forwardToController`).
pub fn refusal_before_forwarding(
    session: &Session,
    auth: &RequestAuth,
    body: &RequestBody,
) -> Option<ResponseBody> {
    let requester = auth.kafka_principal();
    let code = if !token_requests_allowed(requester, Some(session.protocol)) {
        ErrorCode::DelegationTokenRequestNotAllowed
    } else if let RequestBody::CreateDelegationToken(r) = body {
        if let Some(code) = create_refusal(r, requester, |owner| {
            auth.authorize(OPERATION_CREATE_TOKENS, RESOURCE_TYPE_USER, owner)
        }) {
            code
        } else if r
            .renewers
            .iter()
            .any(|p| p.principal_type != KafkaPrincipal::USER_TYPE)
        {
            ErrorCode::InvalidPrincipalType
        } else {
            return None;
        }
    } else {
        return None;
    };
    token_api_refused(body, requester, code)
}
