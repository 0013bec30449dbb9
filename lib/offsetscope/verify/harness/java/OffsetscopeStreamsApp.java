// A tiny Kafka Streams application for offsetscope's checks (offsetscope.verify.harness.streams):
// a word count (two subtopologies: the repartition by word, the count in a persistent store), run
// on the streams rebalance protocol (group.protocol=streams, KIP-1071). Standby replicas are the
// group's setting there (streams.num.standby.replicas, set by the caller through the Admin API),
// not the client's num.standby.replicas.
//
// Arguments: bootstrap servers, application id, input topic, output topic, state directory,
// user endpoint (host:port, application.server).
//
// It prints one JSON line on stdout whenever what it can observe changes: the Streams state,
// and the active and standby tasks its threads own ("0_1" = subtopology 0, partition 1). It stops
// cleanly (leaving the group) when stdin reaches "stop" or its end.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

public final class OffsetscopeStreamsApp {

    private OffsetscopeStreamsApp() {
    }

    private static String quote(String text) {
        return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    private static String tasks(TreeSet<String> ids) {
        StringBuilder out = new StringBuilder("[");
        for (String id : ids) {
            if (out.length() > 1) {
                out.append(',');
            }
            out.append(quote(id));
        }
        return out.append(']').toString();
    }

    private static synchronized void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String input = args[2];
        String output = args[3];
        String stateDir = args[4];
        String endpoint = args[5];

        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.APPLICATION_SERVER_CONFIG, endpoint);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 500);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
            .count(Materialized.as("word-counts"))
            .toStream()
            .mapValues(count -> Long.toString(count))
            .to(output, Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setStateListener((now, before) ->
            emit("{\"event\":\"state\",\"state\":" + quote(now.name()) + "}"));
        streams.setUncaughtExceptionHandler(error -> {
            emit("{\"event\":\"error\",\"message\":" + quote(String.valueOf(error)) + "}");
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler
                .StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();

        AtomicBoolean stop = new AtomicBoolean(false);
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(
                    new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.trim().equals("stop")) {
                        break;
                    }
                }
            } catch (Exception ignored) {
                // stdin closed: stop as for "stop"
            }
            stop.set(true);
        }, "stdin");
        reader.setDaemon(true);
        reader.start();

        String last = "";
        while (!stop.get()) {
            TreeSet<String> active = new TreeSet<>();
            TreeSet<String> standby = new TreeSet<>();
            if (streams.state() == KafkaStreams.State.RUNNING) {
                for (ThreadMetadata thread : streams.metadataForLocalThreads()) {
                    for (TaskMetadata task : thread.activeTasks()) {
                        active.add(task.taskId().toString());
                    }
                    for (TaskMetadata task : thread.standbyTasks()) {
                        standby.add(task.taskId().toString());
                    }
                }
            }
            String line = "{\"event\":\"tasks\",\"state\":" + quote(streams.state().name())
                + ",\"active\":" + tasks(active) + ",\"standby\":" + tasks(standby) + "}";
            if (!line.equals(last)) {
                emit(line);
                last = line;
            }
            Thread.sleep(200);
        }
        // Leave the group: the coordinator bumps the epoch at once instead of waiting for the
        // member's session to time out.
        streams.close(CloseOptions.timeout(Duration.ofSeconds(30))
            .withGroupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP));
        emit("{\"event\":\"closed\"}");
    }
}
