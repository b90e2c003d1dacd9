package prompts

// diagnosisSchema is the reply format the diagnose prompt asks for; it
// decodes into Diagnosis.
const diagnosisSchema = `{
  "bottlenecks": [
    {
      "rank": 1,
      "category": "memory | compute | latency",
      "summary": "one line naming what limits the kernel",
      "reasoning": "why, citing the roofline numbers and metrics above",
      "root_causes": [
        {
          "cause": "the specific property of the code responsible",
          "evidence": [
            {"metric": "metric name exactly as listed above", "value": "its value as listed", "interpretation": "what it shows"}
          ]
        }
      ],
      "fixes": [
        {"fix": "a concrete change to the kernel code", "rationale": "why it removes the cause"}
      ]
    }
  ]
}`

// reflectionSchema is the reply format the reflect prompt asks for; it
// decodes into Reflection.
const reflectionSchema = `{
  "was_diagnosis_correct": true,
  "was_fix_effective": false,
  "expected_outcome": "what the fix should have changed",
  "actual_outcome": "what the numbers show happened",
  "reasoning": "why the outcome differed (or matched)",
  "lessons": ["a short lesson for the next attempts"],
  "avoid_patterns": ["a code pattern that did not help here"],
  "try_patterns": ["a code pattern worth trying next"]
}`
