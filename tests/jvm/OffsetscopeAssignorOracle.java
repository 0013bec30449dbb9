/*
 * Oracle for offsetscope's Python partition assignors: runs Kafka's own assignors (from the
 * kafka-clients jar on the classpath) on inputs read from stdin and prints their answers.
 *
 * Protocol: one JSON request per stdin line, one JSON answer per stdout line, in order, so one JVM
 * serves a whole test session. Requests ("op"):
 *
 *   assign      {"assignor", "instance"?, "cluster": {"topics": {t: n}, "racks"?: {t: [[rack|null, ...] per partition]}},
 *                "members": [{"id", "topics", "userData"? (Base64|null), "owned"? [[t, p]], "generation"?,
 *                             "rack"?, "instanceId"?}]}
 *               -> {"assignments": [{"member", "partitions": [[t, p]], "userData"}]} in member order
 *               The subscriptions map is a HashMap filled in member order, as ConsumerCoordinator's
 *               onLeaderElected fills it from the JoinGroup response. "instance" names an assignor
 *               object kept across requests (the sticky assignors keep state between rebalances).
 *   userdata    {"assignor", "assigned"?: [[t, p]] | null, "generation"?} -> {"userData": Base64|null}
 *               (onAssignment with that assignment and generation, then subscriptionUserData)
 *   memberdata  {"assignor", "member": {...as above}} -> {"partitions": [[t, p]], "generation": n|null}
 *   hashorder   {"keytype": "string"|"tp", "capacity"?: n, "ops": [["put"|"cia"|"remove", key]]}
 *               -> {"order": [key]}: iteration order of a java.util.HashMap after those operations
 *
 * Any exception becomes {"error": "<SimpleClassName>: <message>"}.
 *
 * The class sits in Kafka's consumer package only to reach the protected memberData() of the
 * sticky assignors; it uses nothing else that is not public.
 */
package org.apache.kafka.clients.consumer;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor.MemberData;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

public final class OffsetscopeAssignorOracle {

    private final Map<String, ConsumerPartitionAssignor> instances = new HashMap<>();

    public static void main(String[] args) throws Exception {
        // The protocol owns stdout; anything a logger prints goes to stderr instead.
        PrintStream protocolOut = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        System.setOut(System.err);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        OffsetscopeAssignorOracle oracle = new OffsetscopeAssignorOracle();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty())
                continue;
            Object answer;
            try {
                answer = oracle.handle(asMap(new Json(line).value()));
            } catch (Throwable t) {
                Map<String, Object> err = new LinkedHashMap<>();
                err.put("error", t.getClass().getSimpleName() + ": " + t.getMessage());
                answer = err;
            }
            protocolOut.println(Json.write(answer));
            protocolOut.flush();
        }
    }

    private Object handle(Map<String, Object> req) {
        String op = (String) req.get("op");
        switch (op) {
            case "assign":
                return assign(req);
            case "userdata":
                return userData(req);
            case "memberdata":
                return memberData(req);
            case "hashorder":
                return hashOrder(req);
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    private static ConsumerPartitionAssignor newAssignor(String name) {
        switch (name) {
            case "range":
                return new RangeAssignor();
            case "roundrobin":
                return new RoundRobinAssignor();
            case "sticky":
                return new StickyAssignor();
            case "cooperative-sticky":
                return new CooperativeStickyAssignor();
            default:
                throw new IllegalArgumentException("unknown assignor " + name);
        }
    }

    private Map<String, Object> assign(Map<String, Object> req) {
        String name = (String) req.get("assignor");
        String instance = (String) req.get("instance");
        ConsumerPartitionAssignor assignor = instance == null
            ? newAssignor(name)
            : instances.computeIfAbsent(instance, k -> newAssignor(name));
        if (!assignor.name().equals(name))
            throw new IllegalArgumentException("instance " + instance + " is a " + assignor.name());

        Cluster cluster = cluster(asMap(req.get("cluster")));
        List<Object> members = asList(req.get("members"));
        // As ConsumerCoordinator.onLeaderElected: a HashMap filled in JoinGroup-response order.
        Map<String, Subscription> subscriptions = new HashMap<>();
        List<String> order = new ArrayList<>();
        for (Object m : members) {
            Map<String, Object> member = asMap(m);
            String id = (String) member.get("id");
            subscriptions.put(id, subscription(member));
            order.add(id);
        }
        Map<String, Assignment> result = assignor.assign(cluster, new GroupSubscription(subscriptions)).groupAssignment();

        List<Object> out = new ArrayList<>();
        for (String id : order) {
            Assignment a = result.get(id);
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("member", id);
            entry.put("partitions", a == null ? null : tps(a.partitions()));
            entry.put("userData", a == null ? null : b64(a.userData()));
            out.add(entry);
        }
        if (result.size() != new HashSet<>(order).size())
            throw new IllegalStateException("assignor returned " + result.keySet() + " for " + order);
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("assignments", out);
        return answer;
    }

    private Map<String, Object> userData(Map<String, Object> req) {
        ConsumerPartitionAssignor assignor = newAssignor((String) req.get("assignor"));
        Object assigned = req.get("assigned");
        if (assigned != null) {
            int generation = ((Number) req.get("generation")).intValue();
            assignor.onAssignment(new Assignment(topicPartitions(assigned)),
                new ConsumerGroupMetadata("group", generation, "member", Optional.empty()));
        }
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("userData", b64(assignor.subscriptionUserData(Collections.emptySet())));
        return answer;
    }

    private Map<String, Object> memberData(Map<String, Object> req) {
        String name = (String) req.get("assignor");
        Subscription subscription = subscription(asMap(req.get("member")));
        MemberData data;
        if (name.equals("sticky"))
            data = new StickyAssignor().memberData(subscription);
        else if (name.equals("cooperative-sticky"))
            data = new CooperativeStickyAssignor().memberData(subscription);
        else
            throw new IllegalArgumentException("no member data for " + name);
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("partitions", tps(data.partitions));
        answer.put("generation", data.generation.orElse(null));
        return answer;
    }

    private Map<String, Object> hashOrder(Map<String, Object> req) {
        boolean tpKeys = "tp".equals(req.get("keytype"));
        Object capacity = req.get("capacity");
        Map<Object, Object> map = capacity == null ? new HashMap<>() : new HashMap<>(((Number) capacity).intValue());
        for (Object o : asList(req.get("ops"))) {
            List<Object> op = asList(o);
            Object key = tpKeys ? topicPartition(op.get(1)) : op.get(1);
            switch ((String) op.get(0)) {
                case "put":
                    map.put(key, Boolean.TRUE);
                    break;
                case "cia":
                    map.computeIfAbsent(key, k -> Boolean.TRUE);
                    break;
                case "remove":
                    map.remove(key);
                    break;
                default:
                    throw new IllegalArgumentException("unknown map op " + op.get(0));
            }
        }
        List<Object> order = new ArrayList<>();
        for (Object key : map.keySet())
            order.add(tpKeys ? tp((TopicPartition) key) : key);
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("order", order);
        return answer;
    }

    private static Subscription subscription(Map<String, Object> member) {
        List<String> topics = new ArrayList<>();
        for (Object t : asList(member.get("topics")))
            topics.add((String) t);
        Object ud = member.get("userData");
        ByteBuffer userData = ud == null ? null : ByteBuffer.wrap(Base64.getDecoder().decode((String) ud));
        Object owned = member.get("owned");
        List<TopicPartition> ownedPartitions = owned == null ? Collections.emptyList() : topicPartitions(owned);
        Object gen = member.get("generation");
        int generation = gen == null ? -1 : ((Number) gen).intValue();
        Subscription subscription = new Subscription(topics, userData, ownedPartitions, generation,
            Optional.ofNullable((String) member.get("rack")));
        subscription.setGroupInstanceId(Optional.ofNullable((String) member.get("instanceId")));
        return subscription;
    }

    private static Cluster cluster(Map<String, Object> spec) {
        Map<String, Object> topics = asMap(spec.get("topics"));
        Object racksSpec = spec.get("racks");
        Map<String, Object> racks = racksSpec == null ? Collections.emptyMap() : asMap(racksSpec);
        List<Node> nodes = new ArrayList<>();
        Node rackless = new Node(0, "localhost", 9092, null);
        nodes.add(rackless);
        List<PartitionInfo> partitions = new ArrayList<>();
        for (Map.Entry<String, Object> e : topics.entrySet()) {
            String topic = e.getKey();
            int count = ((Number) e.getValue()).intValue();
            List<Object> topicRacks = racks.containsKey(topic) ? asList(racks.get(topic)) : null;
            for (int p = 0; p < count; p++) {
                Node[] replicas;
                if (topicRacks == null) {
                    replicas = new Node[] {rackless};
                } else {
                    List<Object> replicaRacks = asList(topicRacks.get(p));
                    replicas = new Node[replicaRacks.size()];
                    for (int r = 0; r < replicas.length; r++) {
                        // one broker per replica; only its rack matters to the assignors
                        replicas[r] = new Node(nodes.size(), "localhost", 9092 + nodes.size(), (String) replicaRacks.get(r));
                        nodes.add(replicas[r]);
                    }
                }
                Node leader = replicas.length == 0 ? Node.noNode() : replicas[0];
                partitions.add(new PartitionInfo(topic, p, leader, replicas, replicas));
            }
        }
        return new Cluster("oracle", nodes, partitions, Collections.emptySet(), Collections.emptySet());
    }

    private static List<TopicPartition> topicPartitions(Object spec) {
        List<TopicPartition> out = new ArrayList<>();
        for (Object o : asList(spec))
            out.add(topicPartition(o));
        return out;
    }

    private static TopicPartition topicPartition(Object spec) {
        List<Object> pair = asList(spec);
        return new TopicPartition((String) pair.get(0), ((Number) pair.get(1)).intValue());
    }

    private static List<Object> tps(List<TopicPartition> partitions) {
        List<Object> out = new ArrayList<>();
        for (TopicPartition tp : partitions)
            out.add(tp(tp));
        return out;
    }

    private static List<Object> tp(TopicPartition tp) {
        List<Object> pair = new ArrayList<>();
        pair.add(tp.topic());
        pair.add(tp.partition());
        return pair;
    }

    private static String b64(ByteBuffer buffer) {
        if (buffer == null)
            return null;
        ByteBuffer copy = buffer.duplicate();
        byte[] bytes = new byte[copy.remaining()];
        copy.get(bytes);
        return Base64.getEncoder().encodeToString(bytes);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> asMap(Object o) {
        return (Map<String, Object>) o;
    }

    @SuppressWarnings("unchecked")
    private static List<Object> asList(Object o) {
        return (List<Object>) o;
    }

    /** A minimal JSON reader/writer: objects keep key order, numbers are longs, no floats needed. */
    static final class Json {
        private final String s;
        private int i;

        Json(String s) {
            this.s = s;
        }

        Object value() {
            Object v = read();
            skip();
            if (i != s.length())
                throw new IllegalArgumentException("trailing characters at " + i);
            return v;
        }

        private void skip() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i)))
                i++;
        }

        private Object read() {
            skip();
            char c = s.charAt(i);
            if (c == '{') {
                i++;
                Map<String, Object> m = new LinkedHashMap<>();
                skip();
                if (s.charAt(i) == '}') {
                    i++;
                    return m;
                }
                while (true) {
                    skip();
                    String k = string();
                    skip();
                    expect(':');
                    m.put(k, read());
                    skip();
                    if (s.charAt(i) == ',') {
                        i++;
                    } else {
                        expect('}');
                        return m;
                    }
                }
            }
            if (c == '[') {
                i++;
                List<Object> l = new ArrayList<>();
                skip();
                if (s.charAt(i) == ']') {
                    i++;
                    return l;
                }
                while (true) {
                    l.add(read());
                    skip();
                    if (s.charAt(i) == ',') {
                        i++;
                    } else {
                        expect(']');
                        return l;
                    }
                }
            }
            if (c == '"')
                return string();
            if (s.startsWith("null", i)) {
                i += 4;
                return null;
            }
            if (s.startsWith("true", i)) {
                i += 4;
                return Boolean.TRUE;
            }
            if (s.startsWith("false", i)) {
                i += 5;
                return Boolean.FALSE;
            }
            int start = i;
            if (c == '-')
                i++;
            while (i < s.length() && Character.isDigit(s.charAt(i)))
                i++;
            return Long.parseLong(s.substring(start, i));
        }

        private void expect(char c) {
            if (s.charAt(i) != c)
                throw new IllegalArgumentException("expected " + c + " at " + i);
            i++;
        }

        private String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                char c = s.charAt(i++);
                if (c == '"')
                    return b.toString();
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                char e = s.charAt(i++);
                switch (e) {
                    case 'n': b.append('\n'); break;
                    case 't': b.append('\t'); break;
                    case 'r': b.append('\r'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'u':
                        b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        i += 4;
                        break;
                    default: b.append(e);
                }
            }
        }

        static String write(Object o) {
            StringBuilder b = new StringBuilder();
            write(o, b);
            return b.toString();
        }

        @SuppressWarnings("unchecked")
        private static void write(Object o, StringBuilder b) {
            if (o == null) {
                b.append("null");
            } else if (o instanceof String) {
                String str = (String) o;
                b.append('"');
                for (int k = 0; k < str.length(); k++) {
                    char c = str.charAt(k);
                    // escape every non-ASCII UTF-16 unit so lone surrogates survive the trip
                    if (c == '"' || c == '\\')
                        b.append('\\').append(c);
                    else if (c < 0x20 || c > 0x7e)
                        b.append(String.format("\\u%04x", (int) c));
                    else
                        b.append(c);
                }
                b.append('"');
            } else if (o instanceof Number || o instanceof Boolean) {
                b.append(o);
            } else if (o instanceof Map) {
                b.append('{');
                boolean first = true;
                for (Map.Entry<String, Object> e : ((Map<String, Object>) o).entrySet()) {
                    if (!first)
                        b.append(',');
                    first = false;
                    write(e.getKey(), b);
                    b.append(':');
                    write(e.getValue(), b);
                }
                b.append('}');
            } else if (o instanceof List) {
                b.append('[');
                boolean first = true;
                for (Object v : (List<Object>) o) {
                    if (!first)
                        b.append(',');
                    first = false;
                    write(v, b);
                }
                b.append(']');
            } else {
                throw new IllegalArgumentException("cannot write " + o.getClass());
            }
        }
    }
}
