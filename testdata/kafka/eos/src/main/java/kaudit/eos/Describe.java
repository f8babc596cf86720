package kaudit.eos;

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.Properties;

import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.KafkaStreams;

/**
 * Prints the describe() text of the topology Kafka's own EosTestClient builds (with
 * repartitioning, as "process-complex" runs it). EosTestClient builds its topology inside a
 * private method and never prints it, so this runs that very method (by reflection) on the
 * same properties file and prints what the resulting KafkaStreams holds: the text
 * Topology#describe() gives. Nothing connects to a broker; the KafkaStreams is closed unstarted.
 *
 * Usage: java -cp … kaudit.eos.Describe PROPS
 */
public final class Describe {
    public static void main(final String[] args) throws Exception {
        final Properties props = Utils.loadProps(args[0]);
        final Class<?> client = Class.forName("org.apache.kafka.streams.tests.EosTestClient");
        final Constructor<?> ctor = client.getDeclaredConstructor(Properties.class, boolean.class);
        ctor.setAccessible(true);
        final Object c = ctor.newInstance(props, true);
        final Method create = client.getDeclaredMethod("createKafkaStreams", Properties.class);
        create.setAccessible(true);
        final KafkaStreams streams = (KafkaStreams) create.invoke(c, props);
        try {
            final Field f = KafkaStreams.class.getDeclaredField("topologyMetadata");
            f.setAccessible(true);
            final Object meta = f.get(streams);
            final Method text = meta.getClass().getMethod("topologyDescriptionString");
            System.out.print(text.invoke(meta));
            System.out.flush();
        } finally {
            streams.close();
        }
    }
}
