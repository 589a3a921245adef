//! KafkaApis: the answers a broker builds from its metadata for client requests (Metadata,
//! DescribeCluster, DescribeConfigs, ...), as pure functions of the image and the request.
