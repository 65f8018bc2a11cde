/*
 * A member of a Kafka share group, on librdkafka's share consumer (KIP-932; librdkafka 2.15+): a test helper for
 * test/integration/librdkafka-share.test.ts, compiled there against a librdkafka source tree the test is given
 * (LIBRDKAFKA_SRC), never a copy kept here.
 *
 *   share-consumer BOOTSTRAP GROUP TOPIC IDLE_MS
 *
 * Subscribes, then acknowledges each record explicitly by its offset: offsets ending in 7 are REJECTed, those ending
 * in 3 RELEASEd at their first delivery (accepted at the next), the rest ACCEPTed. Prints one line per record,
 * "OUTCOME PARTITION OFFSET DELIVERY_COUNT KEY", commits, and stops once IDLE_MS pass with no record.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "rdkafka.h"

static long long now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv) {
        char errstr[512];
        rd_kafka_conf_t *conf;
        rd_kafka_share_t *rkshare;
        rd_kafka_topic_partition_list_t *topics;
        long long idle_ms, last;

        if (argc != 5) {
                fprintf(stderr, "usage: %s BOOTSTRAP GROUP TOPIC IDLE_MS\n", argv[0]);
                return 2;
        }
        idle_ms = atoll(argv[4]);
        conf    = rd_kafka_conf_new();
        if (rd_kafka_conf_set(conf, "bootstrap.servers", argv[1], errstr, sizeof(errstr)) ||
            rd_kafka_conf_set(conf, "group.id", argv[2], errstr, sizeof(errstr)) ||
            rd_kafka_conf_set(conf, "share.acknowledgement.mode", "explicit", errstr, sizeof(errstr))) {
                fprintf(stderr, "config: %s\n", errstr);
                return 2;
        }
        rkshare = rd_kafka_share_consumer_new(conf, errstr, sizeof(errstr));
        if (!rkshare) {
                fprintf(stderr, "share consumer: %s\n", errstr);
                return 2;
        }
        topics = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(topics, argv[3], RD_KAFKA_PARTITION_UA);
        if (rd_kafka_share_subscribe(rkshare, topics)) {
                fprintf(stderr, "subscribe failed\n");
                return 2;
        }
        rd_kafka_topic_partition_list_destroy(topics);

        last = now_ms();
        while (now_ms() - last < idle_ms) {
                rd_kafka_messages_t *batch = NULL;
                rd_kafka_error_t *error    = rd_kafka_share_poll(rkshare, 500, &batch);
                size_t i, n;
                if (error) {
                        fprintf(stderr, "poll: %s\n", rd_kafka_error_string(error));
                        rd_kafka_error_destroy(error);
                        rd_kafka_messages_destroy(batch);
                        continue;
                }
                n = rd_kafka_messages_count(batch);
                for (i = 0; i < n; i++) {
                        rd_kafka_message_t *m = rd_kafka_messages_get(batch, i);
                        int count             = rd_kafka_message_delivery_count(m);
                        const char *outcome;
                        rd_kafka_share_AcknowledgeType_t type;
                        if (m->err)
                                continue;
                        if (m->offset % 10 == 7) {
                                outcome = "REJECT";
                                type    = RD_KAFKA_SHARE_ACKNOWLEDGE_TYPE_REJECT;
                        } else if (m->offset % 10 == 3 && count == 1) {
                                outcome = "RELEASE";
                                type    = RD_KAFKA_SHARE_ACKNOWLEDGE_TYPE_RELEASE;
                        } else {
                                outcome = "ACCEPT";
                                type    = RD_KAFKA_SHARE_ACKNOWLEDGE_TYPE_ACCEPT;
                        }
                        if (rd_kafka_share_acknowledge_type(rkshare, m, type)) {
                                fprintf(stderr, "acknowledge failed\n");
                                return 1;
                        }
                        printf("%s %d %lld %d %.*s\n", outcome, (int)m->partition, (long long)m->offset, count, (int)m->key_len,
                               m->key ? (const char *)m->key : "");
                        last = now_ms();
                }
                rd_kafka_messages_destroy(batch);
                fflush(stdout);
        }
        {
                rd_kafka_topic_partition_list_t *results = NULL;
                rd_kafka_error_t *error                 = rd_kafka_share_commit_sync(rkshare, 10000, &results);
                if (error) {
                        fprintf(stderr, "commit: %s\n", rd_kafka_error_string(error));
                        rd_kafka_error_destroy(error);
                }
                if (results)
                        rd_kafka_topic_partition_list_destroy(results);
        }
        rd_kafka_share_consumer_close(rkshare);
        rd_kafka_share_destroy(rkshare);
        return 0;
}
