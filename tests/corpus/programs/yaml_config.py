"""Load and dump a configuration with PyYAML's pure-Python SafeLoader and SafeDumper (corpus:
replay of a package nobody here wrote). The merge keys (``<<: *defaults``) and the dump's
aliases keep ids of strings and objects: ``flatten_mapping``'s ``merge_key_ids``, the
representer's ``alias_key``."""
import yaml

DOC = """
defaults: &defaults
  retries: 3
  timeout: 2.5
  tags: [a, b, c]
services:
  api:
    <<: *defaults
    port: 8080
    hosts:
      - name: alpha
        weight: 0.7
      - name: beta
        weight: 0.3
  worker:
    <<: *defaults
    retries: 5
    schedule: "*/5 * * * *"
    enabled: yes
    started: 2024-01-02 03:04:05
notes: |
  multi-line
  text block
empty: ~
"""

def main():
    data = yaml.load(DOC, Loader=yaml.SafeLoader)
    print(sorted(data["services"]), data["services"]["worker"]["retries"], data["services"]["api"]["tags"])
    text = yaml.dump(data, Dumper=yaml.SafeDumper, default_flow_style=False, sort_keys=True)
    print(len(text)); print(text[:300])
    again = yaml.load(text, Loader=yaml.SafeLoader)
    print(again == data)
    docs = list(yaml.load_all("a: 1\n---\nb: [1, 2]\n---\n- x\n- y\n", Loader=yaml.SafeLoader))
    print(docs)

if __name__ == "__main__":
    main()
