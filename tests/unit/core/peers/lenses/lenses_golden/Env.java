import java.util.*;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.module.scala.DefaultScalaModule$;
// Follows LS SchemalessEnvelopeTransformer.envelope/convertMap and ToJsonDataConverter (jacksonJson with DefaultScalaModule)
public class Env {
  static ObjectMapper om = new ObjectMapper().registerModule(DefaultScalaModule$.MODULE$);
  static Object connectSchemaless(Object parsed) { // Connect JsonConverter schemaless: objects -> java.util.HashMap, arrays -> ArrayList, ints -> Long
    if (parsed instanceof Map) { HashMap<Object,Object> m = new HashMap<>(); for (Map.Entry<?,?> e: ((Map<?,?>)parsed).entrySet()) m.put(e.getKey(), connectSchemaless(e.getValue())); return m; }
    if (parsed instanceof List) { ArrayList<Object> l = new ArrayList<>(); for (Object o: (List<?>)parsed) l.add(connectSchemaless(o)); return l; }
    if (parsed instanceof Integer) return ((Integer)parsed).longValue();
    return parsed;
  }
  static Object convert(Object any) { // convertMap: from.asScala.map{...}.asJava -> scala mutable.HashMap
    if (any instanceof Map) { scala.collection.mutable.HashMap<Object,Object> m = new scala.collection.mutable.HashMap<>();
      for (Map.Entry<?,?> e: ((Map<?,?>)any).entrySet()) m.update(convert(e.getKey()), convert(e.getValue()));
      return scala.jdk.javaapi.CollectionConverters.asJava(m); }
    if (any instanceof List) { ArrayList<Object> l = new ArrayList<>(); for (Object o: (List<?>)any) l.add(convert(o)); return l; }
    return any;
  }
  public static void main(String[] a) throws Exception {
    // args per record: key kind, key, value kind, value, topic, partition, offset, timestamp|-, headers as k=v;k=v (typed: i:, f:, b:, s:)
    Scanner sc = new Scanner(System.in);
    while (sc.hasNextLine()) {
      String[] f = sc.nextLine().split("\t", -1);
      boolean envelope = f[0].equals("env");
      Object key = field(f[1], f[2]); Object value = field(f[3], f[4]);
      if (!envelope) { System.out.println(om.writeValueAsString(value)); continue; }
      HashMap<String,Object> env = new HashMap<>();
      env.put("key", convert(key)); if (f[1].equals("bytes") && key != null) env.put("keyIsArray", true);
      env.put("value", convert(value)); if (f[3].equals("bytes") && value != null) env.put("valueIsArray", true);
      HashMap<String,Object> md = new HashMap<>();
      if (!f[8].equals("-")) md.put("timestamp", Long.parseLong(f[8]));
      md.put("topic", f[5]); md.put("partition", Integer.parseInt(f[6])); md.put("offset", Long.parseLong(f[7]));
      env.put("metadata", md);
      HashMap<String,Object> hd = new HashMap<>();
      if (!f[9].isEmpty()) for (String h: f[9].split(";")) { String[] kv = h.split("=", 2); String v = kv[1];
        Object typed = v.startsWith("i:") ? (Object)Long.parseLong(v.substring(2)) : v.startsWith("f:") ? (Object)Float.parseFloat(v.substring(2)) : v.startsWith("b:") ? (Object)Boolean.parseBoolean(v.substring(2)) : v.substring(2);
        hd.put(kv[0], typed); }
      env.put("headers", hd);
      System.out.println(om.writeValueAsString(env));
    }
  }
  static Object field(String kind, String text) throws Exception {
    if (kind.equals("null")) return null;
    if (kind.equals("string")) return text;
    if (kind.equals("bytes")) return Base64.getDecoder().decode(text);
    return connectSchemaless(new ObjectMapper().readValue(text, Object.class));
  }
}
