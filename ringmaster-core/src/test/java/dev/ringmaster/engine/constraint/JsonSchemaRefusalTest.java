package dev.ringmaster.engine.constraint;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The compiler refuses every JSON-schema keyword outside its subset, and every combination whose
 * second keyword it would drop, with an error naming the keyword and where it is.
 */
class JsonSchemaRefusalTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      quoteCharacter = '`',
      textBlock =
          """
          {"type": "number", "multipleOf": 0.5}                          | #: the fractional 'multipleOf' 0.5 (only integer divisors
          {"type": "number", "multipleOf": 0}                            | #: 'multipleOf' must be a number above 0, got 0
          {"type": "integer", "multipleOf": -3}                          | #: 'multipleOf' must be a number above 0, got -3
          {"type": "integer", "multipleOf": "3"}                         | #: 'multipleOf' must be a number above 0, got "3"
          {"type": "integer", "multipleOf": 1000001}                     | #: the 'multipleOf' 1000001 (divisors are at most 1000000)
          {"type": "integer", "multipleOf": 999983}                      | #: 'multipleOf' 999983 needs over 100000 automaton states (use a smaller divisor
          {"multipleOf": 3}                                              | #: 'multipleOf' without type integer or number
          {"type": "integer", "multipleOf": 7, "minimum": 1, "maximum": 6} | #: no multiple of 7 is at least 1 and at most 6
          {"type": "number", "multipleOf": 2, "minimum": 0.1, "maximum": 1.9} | #: no multiple of 2 is at least 0.1 and at most 1.9 (multiples are written as integers)
          {"type": "integer", "minimum": 0, "exclusiveMinimum": true}     | #: the boolean 'exclusiveMinimum' of draft 4
          {"minimum": 0}                                                 | #: 'minimum' without type integer or number
          {"minLength": 3}                                               | #: 'minLength' without a type (give "type": "string"
          {"pattern": "a+"}                                              | #: 'pattern' without a type (give "type": "string"
          {"minItems": 2}                                                | #: 'minItems' without a type (give "type": "array"
          {"required": ["a"]}                                            | #: 'required' without a type (give "type": "object"
          {"type": "string", "exclusiveMaximum": 3}                      | #: 'exclusiveMaximum' without type integer or number
          {"type": "number", "maximum": 1e999}                           | #: the bound 'maximum' Infinity (bounds are at most 1e38
          {"type": "number", "minimum": -1e39}                           | #: the bound 'minimum' -1.0E39
          {"type": "integer", "maximum": "9"}                            | #: 'maximum' must be a number, got "9"
          {"type": "integer", "minimum": 2.5, "maximum": 2.9}            | #: no integer is at least 2.5 and at most 2.9
          {"type": "integer", "exclusiveMinimum": 3, "maximum": 3}       | #: no integer is above 3 and at most 3
          {"type": "number", "exclusiveMinimum": 0.5, "exclusiveMaximum": 0.5000000000000001} | #: no number (with a fraction, of at most 15 digits) is above 0.5
          {"type": "array", "uniqueItems": true}                         | #: the keyword 'uniqueItems'
          {"type": "array", "prefixItems": [{"type": "null"}]}           | #: the keyword 'prefixItems'
          {"type": "array", "contains": {"type": "null"}}                | #: the keyword 'contains'
          {"type": "object", "patternProperties": {"a": {}}}             | #: the keyword 'patternProperties'
          {"type": "object", "minProperties": 1}                         | #: the keyword 'minProperties'
          {"type": "object", "maxProperties": 2}                         | #: the keyword 'maxProperties'
          {"type": "object", "propertyNames": {"pattern": "^a"}}         | #: the keyword 'propertyNames'
          {"type": "array", "items": {"type": "integer"}, "uniqueItems": true, "maxItems": 3} | #: the keyword 'uniqueItems'
          {"type": "object", "dependentRequired": {"a": ["b"]}}          | #: the keyword 'dependentRequired'
          {"not": {"type": "null"}}                                      | #: the keyword 'not'
          {"if": {"type": "null"}, "then": {"type": "null"}}             | #: the keyword 'if'
          {"type": "object", "properties": {"a": {"type": "integer", "multipleOf": 0.1}}} | #/properties/a: the fractional 'multipleOf' 0.1
          {"type": "string", "format": "email"}                          | #: the string format 'email'
          {"type": "uint8"}                                              | #: the type 'uint8'
          {"allOf": [{"type": "null"}, {"type": "null"}]}                | #: allOf with more than one schema
          {"$ref": "https://example.com/s.json"}                         | #: the remote $ref
          {"$defs": {"N": {"type": "array", "items": {"$ref": "#/$defs/N"}}}, "$ref": "#/$defs/N"} | recursive $ref '#/$defs/N'
          {"type": "string", "pattern": "a{1,2}", "minLength": 3}        | #: no string matching 'pattern' (without characters JSON must escape) has minLength 3
          {"type": "string", "pattern": "\\\"+", "maxLength": 3}          | #: no string matching 'pattern' (without characters JSON must escape) has minLength 0 and maxLength 3
          {"type": "string", "pattern": "a+", "minLength": 5, "maxLength": 4} | #: maxLength 4 is below minLength 5
          {"type": "string", "format": "date", "maxLength": 3}           | #: 'maxLength' together with 'format'
          {"type": "string", "format": "uuid", "pattern": "a"}           | #: 'pattern' together with 'format'
          {"anyOf": [{"type": "string"}], "maxLength": 2}                | #: 'maxLength' beside 'anyOf'
          {"type": "object", "oneOf": [{"type": "null"}]}                | #: 'type' beside 'oneOf'
          {"$defs": {"S": {"type": "string"}}, "$ref": "#/$defs/S", "minLength": 2} | #: 'minLength' beside '$ref'
          {"enum": ["a", 1], "type": "string"}                           | #: the enum value 1 is not of type "string"
          {"const": "a", "type": ["integer", "null"]}                    | #: the const value "a" is not of type ["integer","null"]
          {"enum": ["ab", "c"], "maxLength": 1}                          | #: 'maxLength' beside 'enum'
          """)
  void refusesWithTheKeywordAndItsPlace(String schema, String message) throws Exception {
    assertThatThrownBy(() -> JsonSchemaCompiler.compile(JSON.readTree(schema)))
        .isInstanceOf(UnsupportedConstraintException.class)
        .hasMessageStartingWith("json_schema at ")
        .hasMessageContaining(message.strip());
  }
}
