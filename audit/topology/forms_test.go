package topology

import "testing"

func TestSpecJavaSerdeNames(t *testing.T) {
	in := "app_id: a\nserdes: {key: String, value: Integer}\ntables:\n  - name: x\n    source: y\n    store: s\n    reduce: latest\n" +
		"    serdes: {key: UUID, value: Long}\n  - {name: z, source: y, store: s2, reduce: latest, serdes: {key: Serdes.ByteArray(), value: org.apache.kafka.common.serialization.Serdes$DoubleSerde}}\n"
	s, err := ParseSpec("k.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if s.Serdes.Key != "String" || s.Tables[0].Serdes.Value != "Long" {
		t.Errorf("serdes = %+v %+v", s.Serdes, s.Tables[0].Serdes)
	}
}
